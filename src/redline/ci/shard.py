"""Merging the exports of a CI matrix's shards back into one run (`redline merge`).

Which cases a shard runs is `running.shards`'s question; here the shards' exports are
checked against each other (every case in one shard, the same inputs) and joined.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from redline.errors import Problem, ProblemsError, RunAlreadyStored, ShardMissing, UsageError
from redline.running.exchange import RESULTS_FILE, export_run, import_run
from redline.running.store import RunStore
from redline.vocabulary.outcome import add_counts, run_result
from redline.vocabulary.records import CaseRecord, RunRecord, RunStatus, SampleRecord


@dataclass(frozen=True)
class MergedRun:
    run: RunRecord
    cases: tuple[CaseRecord, ...]
    samples: tuple[SampleRecord, ...]
    shards: tuple[str, ...]
    #: Shards (`K/N`) with no export, merged anyway with `allow_missing`.
    missing: tuple[str, ...] = ()


def merged_run_id(shard_ids: Iterable[str]) -> str:
    """Deterministic: merging the same shard runs again gives the same id."""
    joined = "\x00".join(sorted(shard_ids))
    return "m" + hashlib.sha256(joined.encode()).hexdigest()[:11]


#: One export as merge reads it: its folder, run, case results and samples.
_Loaded = tuple[Path, RunRecord, list[CaseRecord], list[SampleRecord]]


def merge_exports(folders: Sequence[Path], *, allow_missing: bool = False) -> MergedRun:
    """Read the exports of a sharded run and merge them into one run.

    Refuses, listing every problem at once: a folder that is not an export, the same run
    twice, different pinned models, different git commits, manifests that disagree on an
    input, a case present in two shards, shards of different splits (K/N with different
    N, or the same K twice), and a shard K of N with no export (a matrix job that died
    would otherwise leave a merged run that looks complete) unless `allow_missing`.
    """
    if not folders:
        raise UsageError("name at least one export folder to merge")
    loaded = _load_exports(folders)
    problems = _consistency_problems(loaded)
    missing, split_problems = _shard_coverage(loaded)
    problems.extend(split_problems)
    if missing and not allow_missing:
        n = missing[0].split("/")[1]
        problems.append(
            Problem(
                str(folders[0]),
                0,
                0,
                f"no export of shard {', '.join(missing)}: the merged run would miss its cases",
                f"pass the export of every shard 1..{n} (a matrix job that failed has none), "
                "or --allow-missing to merge a partial run on purpose",
            )
        )
    problems.extend(_cases_in_two_shards(loaded))
    if problems:
        raise (
            ShardMissing(problems, missing)
            if missing and not allow_missing
            else ProblemsError(problems)
        )
    return _merged(loaded, missing)


def _load_exports(folders: Sequence[Path]) -> list[_Loaded]:
    """Each export read through a scratch store; every unreadable or repeated one listed."""
    problems: list[Problem] = []
    loaded: list[_Loaded] = []
    with (
        tempfile.TemporaryDirectory(prefix="redline-merge-") as tmp,
        RunStore.open(Path(tmp) / "merge.db") as scratch,
    ):
        seen: dict[str, Path] = {}
        for folder in folders:
            where = str(folder / RESULTS_FILE)
            try:
                run = import_run(scratch, folder)
            except RunAlreadyStored as exc:
                message = (
                    f"the same run ({exc.run_id}) as {seen.get(exc.run_id, 'an earlier folder')}"
                )
                problems.append(Problem(where, 0, 0, message, "give each shard once"))
                continue
            except UsageError as exc:
                problems.append(Problem(where, 0, 0, str(exc)))
                continue
            seen[run.id] = folder
            loaded.append((folder, run, scratch.cases(run.id), scratch.samples(run.id)))
    if problems:
        raise ProblemsError(problems)
    return loaded


def _cases_in_two_shards(loaded: Sequence[_Loaded]) -> list[Problem]:
    problems: list[Problem] = []
    owner: dict[tuple[str, str], Path] = {}
    for folder, _, cases, _ in loaded:
        for c in cases:
            key = (c.suite, c.case_id)
            if key in owner:
                problems.append(
                    Problem(
                        str(folder / RESULTS_FILE),
                        0,
                        0,
                        f"case {c.suite}/{c.case_id} is also in {owner[key]}",
                        "merge the shards of one run (each case in exactly one shard)",
                    )
                )
            owner[key] = folder
    return problems


def _shard_coverage(
    loaded: Sequence[_Loaded],
) -> tuple[list[str], list[Problem]]:
    """The shards (`K/N`) of the split that no export covers, and problems with the split.

    Only exports that recorded `--shard K/N` take part; a plain run has no split to check.
    """
    problems: list[Problem] = []
    seen: dict[int, Path] = {}
    counts: dict[int, Path] = {}
    for folder, run, _, _ in loaded:
        shard = run.args.get("shard")
        if not (isinstance(shard, list | tuple) and len(shard) == 2):
            continue
        k, n = int(shard[0]), int(shard[1])
        where = str(folder / RESULTS_FILE)
        if counts and n not in counts:
            other_n, other = next(iter(counts.items()))
            problems.append(
                Problem(
                    where,
                    0,
                    0,
                    f"shard {k}/{n} is of another split than {other} (shard ?/{other_n})",
                    "merge the shards of one matrix (the same N everywhere)",
                )
            )
            continue
        counts.setdefault(n, folder)
        if k in seen:
            problems.append(
                Problem(
                    where,
                    0,
                    0,
                    f"shard {k}/{n} is also exported in {seen[k]}",
                    "give each shard once",
                )
            )
        seen.setdefault(k, folder)
    if not counts or problems:
        return [], problems
    n = next(iter(counts))
    return [f"{k}/{n}" for k in range(1, n + 1) if k not in seen], problems


def _consistency_problems(
    loaded: Sequence[_Loaded],
) -> list[Problem]:
    problems: list[Problem] = []
    first_folder, first, _, _ = loaded[0]
    manifest: dict[str, tuple[str, Path]] = {}
    for folder, run, _, _ in loaded:
        where = str(folder / RESULTS_FILE)
        if run.model_id != first.model_id:
            problems.append(
                Problem(
                    where,
                    0,
                    0,
                    f"pinned model {run.model_id} differs from {first.model_id} in {first_folder}",
                    "merge only shards run on the same model",
                )
            )
        if run.git_commit != first.git_commit:
            problems.append(
                Problem(
                    where,
                    0,
                    0,
                    f"git commit {run.git_commit} differs from {first.git_commit} in "
                    f"{first_folder}",
                    "merge only shards of the same commit",
                )
            )
        if run.kind is not first.kind:
            problems.append(
                Problem(
                    where, 0, 0, f"run kind {run.kind} differs from {first.kind} in {first_folder}"
                )
            )
        for path, digest in run.manifest.items():
            if path in manifest and manifest[path][0] != digest:
                problems.append(
                    Problem(
                        where,
                        0,
                        0,
                        f"manifest entry {path} differs from {manifest[path][1]}",
                        "the shards ran on different inputs; rerun them from one commit",
                    )
                )
            manifest.setdefault(path, (digest, folder))
    return problems


def _merged(
    loaded: Sequence[_Loaded],
    missing: Sequence[str] = (),
) -> MergedRun:
    runs = [run for _, run, _, _ in loaded]
    run_id = merged_run_id(r.id for r in runs)
    cases = tuple(
        replace(c, run_id=run_id)
        for c in sorted(
            (c for _, _, cs, _ in loaded for c in cs), key=lambda c: (c.suite, c.case_id)
        )
    )
    samples = tuple(
        replace(s, run_id=run_id)
        for s in sorted(
            (s for _, _, _, ss in loaded for s in ss), key=lambda s: (s.suite, s.case_id, s.index)
        )
    )
    finished = all(r.status is RunStatus.FINISHED for r in runs)
    manifest: dict[str, str] = {}
    for r in runs:
        manifest.update(r.manifest)
    ended = [r.finished_at for r in runs if r.finished_at]
    first = runs[0]
    record = RunRecord(
        id=run_id,
        kind=first.kind,
        status=RunStatus.FINISHED if finished else RunStatus.INTERRUPTED,
        result=run_result((c.result for c in cases), add_counts(c.verdicts for c in cases))
        if finished
        else None,
        started_at=min(r.started_at for r in runs),
        finished_at=max(ended) if finished and ended else None,
        model_id=first.model_id,
        model_alias=first.model_alias,
        suites=tuple(sorted({s for r in runs for s in r.suites})),
        parent_id=first.parent_id,
        git_commit=first.git_commit,
        git_dirty=any(r.git_dirty for r in runs),
        git_branch=first.git_branch,
        redline_version=first.redline_version,
        # The shards' shared arguments (e.g. `--tier quality`) still describe the merged run.
        args={
            k: v
            for k, v in first.args.items()
            if k != "shard" and all(r.args.get(k) == v for r in runs)
        }
        | {"merged_from": sorted(r.id for r in runs)}
        | ({"missing_shards": list(missing)} if missing else {}),
        manifest=dict(sorted(manifest.items())),
    )
    return MergedRun(record, cases, samples, tuple(sorted(r.id for r in runs)), tuple(missing))


def write_merged(merged: MergedRun, *, out: Path | None, store: RunStore | None) -> None:
    """Export the merged run to `out` and/or add it to `store`."""
    if store is not None:
        store.add_run(merged.run, merged.cases, merged.samples)
    if out is not None:
        if store is not None:
            export_run(store, merged.run.id, out)
            return
        with (
            tempfile.TemporaryDirectory(prefix="redline-merge-") as tmp,
            RunStore.open(Path(tmp) / "out.db") as scratch,
        ):
            scratch.add_run(merged.run, merged.cases, merged.samples)
            export_run(scratch, merged.run.id, out)
