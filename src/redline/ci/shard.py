"""Merging the exports of a CI matrix's shards back into one run (`redline merge`).

Which cases a shard runs is `suite.shards`'s question; here the shards' exports are
checked against each other (every case in one shard, the same inputs) and joined.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from redline.errors import ExportUnreadable, Problem, ProblemsError, ShardMissing, UsageError
from redline.running.exchange import (
    RESULTS_FILE,
    SAMPLES_FILE,
    export_files,
    export_run,
    parse_results,
    parse_stored_samples,
    write_export,
)
from redline.running.store import RunStore, StoredSample
from redline.vocabulary.outcome import add_counts, run_result
from redline.vocabulary.records import CaseRecord, RunRecord, RunStatus

_T = TypeVar("_T")


@dataclass(frozen=True)
class MergedRun:
    """The merged run and case results; the samples stay in the shards' files and are
    read once, as they are written (`write_merged`), never all held in memory."""

    run: RunRecord
    cases: tuple[CaseRecord, ...]
    shards: tuple[str, ...]
    #: Shards (`K/N`) with no export, merged anyway with `allow_missing`.
    missing: tuple[str, ...] = ()
    #: Each shard's export folder, with its `samples.jsonl`.
    sources: tuple[Path, ...] = ()

    def iter_samples(self) -> Iterator[StoredSample]:
        """Every sample of the merged run, in the order of the store's `samples`."""
        return (sample for _, sample in self._sample_lines())

    def _sample_lines(self) -> Iterator[tuple[bytes, StoredSample]]:
        """Each sample's export line and rows, the shards' files merged in order.

        A malformed line ends its shard's file; the others are still read so every bad
        file is named, and the error comes at the end, before anything is committed.
        """
        problems: list[Problem] = []
        streams = [self._read(folder, problems) for folder in self.sources]
        yield from heapq.merge(*streams, key=_sample_key)
        if problems:
            raise ProblemsError(problems)

    def _read(self, folder: Path, problems: list[Problem]) -> Iterator[tuple[bytes, StoredSample]]:
        with (folder / SAMPLES_FILE).open("rb") as lines:
            try:
                yield from parse_stored_samples(lines, self.run.id, str(folder))
            except ExportUnreadable as exc:
                problems.append(
                    Problem(str(exc), 0, 0, "the merged run was not written", _REEXPORT)
                )


_REEXPORT = "export that shard again (`redline export RUN_ID --out DIR`) or rerun it"


def _sample_key(item: tuple[bytes, StoredSample]) -> tuple[str, str, int]:
    return item[1].suite, item[1].case_id, item[1].index


def merged_run_id(shard_ids: Iterable[str]) -> str:
    """Deterministic: merging the same shard runs again gives the same id."""
    joined = "\x00".join(sorted(shard_ids))
    return "m" + hashlib.sha256(joined.encode()).hexdigest()[:11]


#: One export as merge reads it: its folder, run and case results (samples left in the file).
_Loaded = tuple[Path, RunRecord, tuple[CaseRecord, ...]]


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
    """Each export's results read; every unreadable or repeated one listed."""
    problems: list[Problem] = []
    loaded: list[_Loaded] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        where = str(folder / RESULTS_FILE)
        try:
            results, _ = export_files(folder)
            run, cases = parse_results(results.read_bytes(), str(folder))
        except UsageError as exc:
            problems.append(Problem(where, 0, 0, str(exc)))
            continue
        if run.id in seen:
            message = f"the same run ({run.id}) as {seen[run.id]}"
            problems.append(Problem(where, 0, 0, message, "give each shard once"))
            continue
        seen[run.id] = folder
        loaded.append((folder, run, cases))
    if problems:
        raise ProblemsError(problems)
    return loaded


def _cases_in_two_shards(loaded: Sequence[_Loaded]) -> list[Problem]:
    problems: list[Problem] = []
    owner: dict[tuple[str, str], Path] = {}
    for folder, _, cases in loaded:
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
    for folder, run, _ in loaded:
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
    first_folder, first, _ = loaded[0]
    manifest: dict[str, tuple[str, tuple[Path, RunRecord]]] = {}
    for folder, run, _ in loaded:
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
        # Each shard hashes the inputs it read: the suite files, and the prompts, fixtures
        # and datasets its cases reference. Inputs two shards both read must be the same.
        for path, digest in run.manifest.items():
            if path in manifest and manifest[path][0] != digest:
                from redline.running.manifest import input_in_words  # only to word a problem

                other = manifest[path][1]
                problems.append(
                    Problem(
                        where,
                        0,
                        0,
                        f"manifest entry {path} differs from {other[0]}: "
                        f"{_shard_name(folder, run)} and {_shard_name(*other)} read "
                        f"{input_in_words(path)} with different content",
                        "the shards ran on different inputs; rerun them from one commit",
                    )
                )
            manifest.setdefault(path, (digest, (folder, run)))
    return problems


def _shard_name(folder: Path, run: RunRecord) -> str:
    """`shard 2/50 (shards/2)`, or the export's folder for a run without `--shard`."""
    shard = run.args.get("shard")
    if isinstance(shard, list | tuple) and len(shard) == 2:
        return f"shard {shard[0]}/{shard[1]} ({folder})"
    return str(folder)


def _merged(
    loaded: Sequence[_Loaded],
    missing: Sequence[str] = (),
) -> MergedRun:
    runs = [run for _, run, _ in loaded]
    run_id = merged_run_id(r.id for r in runs)
    cases = tuple(
        _in_run(c, run_id)
        for c in sorted((c for _, _, cs in loaded for c in cs), key=lambda c: (c.suite, c.case_id))
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
    shards = tuple(sorted(r.id for r in runs))
    return MergedRun(record, cases, shards, tuple(missing), tuple(f for f, _, _ in loaded))


def _in_run(case: CaseRecord, run_id: str) -> CaseRecord:
    """`dataclasses.replace(case, run_id=run_id)` at a fraction of its cost: a merged night
    moves 100,000 case results into the merged run."""
    return CaseRecord(**(vars(case) | {"run_id": run_id}))


def write_merged(merged: MergedRun, *, out: Path | None, store: RunStore | None) -> int:
    """Add the merged run to `store` and/or export it to `out`; returns its sample count.

    The shards' samples stream from their files into the store (one transaction) or the
    export (each line copied as it is), so memory does not grow with the run."""
    counted = 0

    def counting(samples: Iterator[_T]) -> Iterator[_T]:
        nonlocal counted
        for sample in samples:
            counted += 1
            yield sample

    if store is not None:
        store.add_run(merged.run, merged.cases, counting(merged.iter_samples()))
        if out is not None:
            export_run(store, merged.run.id, out)
        return counted
    if out is not None:
        lines = (line.decode("utf-8").rstrip("\r\n") for line, _ in merged._sample_lines())
        write_export(out, merged.run, merged.cases, counting(lines))
    return counted
