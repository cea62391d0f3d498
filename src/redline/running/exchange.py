"""Move runs between stores: `results.json` + `samples.jsonl` in a folder or a zip (CI artifacts).

The export is complete (run, manifest, case results, every sample with its assertion
results), so importing it back gives the same records, raw outputs byte for byte.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from redline.errors import ExportUnreadable, NoExport, RunAlreadyStored, UsageError
from redline.running.recordjson import record_from_json, record_json
from redline.running.store import RunStore, StoredSample
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    CiOrigin,
    RunRecord,
    SampleRecord,
)
from redline.vocabulary.verdicts import VERDICT_ORDER

FORMAT = "redline-run-export"
FORMAT_VERSION = 1
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
_S = TypeVar("_S")


def check_out_dir(out: Path) -> None:
    """A usage error when `out` cannot be the folder an export is written to."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder; give a folder for the export")


def export_run(store: RunStore, run_id: str, out: Path) -> Path:
    """Write the run to `out/results.json` and `out/samples.jsonl`; returns `out`."""
    run = store.run(run_id)
    lines = (_json_line(data) for data in store.iter_sample_json(run.id))
    return write_export(out, run, store.cases(run.id), lines)


def write_export(
    out: Path, run: RunRecord, cases: Sequence[CaseRecord], sample_lines: Iterable[str]
) -> Path:
    """Write an export of `run`: each sample's JSON line as given, streamed to its file,
    then the results. Nothing is left behind when the lines end in an error: the samples
    file is written beside its final name and renamed into place at the end."""
    check_out_dir(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot create the export folder: {exc.strerror}") from None
    partial = out / (SAMPLES_FILE + ".partial")
    written = 0
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as fh:
            for line in sample_lines:
                fh.write(line)
                fh.write("\n")
                written += 1
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(out / SAMPLES_FILE)
    _write_results(out / RESULTS_FILE, run, cases, written)
    return out


def _write_results(path: Path, run: RunRecord, cases: Sequence[CaseRecord], samples: int) -> None:
    """`results.json` as `json.dumps(indent=2)` writes it, one case result at a time (a
    merged night has 100,000 of them: never all as JSON objects and text at once)."""
    head = json.dumps(_results_head(run, cases, samples), indent=2, ensure_ascii=False)
    manifest = json.dumps(
        {"manifest": dict(sorted(run.manifest.items()))}, indent=2, ensure_ascii=False
    )
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(head.removesuffix("\n}"))
        fh.write(',\n  "cases": [')
        for i, c in enumerate(cases):
            fh.write(",\n    " if i else "\n    ")
            fh.write(json.dumps(case_json(c), indent=2, ensure_ascii=False).replace("\n", "\n    "))
        fh.write("\n  ]," if cases else "],")
        fh.write(manifest.removeprefix("{"))
        fh.write("\n")


def _results_head(run: RunRecord, cases: Sequence[CaseRecord], samples: int) -> dict[str, Any]:
    """What `results.json` says before its case results: the run and a summary."""
    totals = dict.fromkeys(VERDICT_ORDER, 0)
    for c in cases:
        for v, n in c.verdicts.items():
            totals[v] += n
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "run": run_json(run),
        "summary": {
            "result": None if run.result is None else str(run.result),
            "cases": len(cases),
            "cases_passed": sum(c.result is CaseOutcome.PASS for c in cases),
            "cases_failed": sum(c.result is CaseOutcome.FAIL for c in cases),
            "cases_inconclusive": sum(c.result is CaseOutcome.INCONCLUSIVE for c in cases),
            "cases_marginal": sum(c.result is CaseOutcome.MARGINAL for c in cases),
            "samples": samples,
            "verdicts": {str(v): n for v, n in totals.items()},
        },
    }


@dataclass(frozen=True)
class ExportedRun:
    """One run as read from an export, not yet in any store; `where` names its source."""

    run: RunRecord
    cases: tuple[CaseRecord, ...]
    samples: tuple[SampleRecord, ...]
    where: str


def import_run(store: RunStore, folder: Path) -> RunRecord:
    """Load an exported run into the store; refuses a run id the store already holds."""
    return add_export(store, read_export(folder))


def add_export(store: RunStore, exported: ExportedRun, origin: CiOrigin | None = None) -> RunRecord:
    """Add a read export to the store in one transaction; RunAlreadyStored when it is there."""
    if store.has_run(exported.run.id):
        raise RunAlreadyStored(exported.run.id, store.path)
    store.add_run(exported.run, exported.cases, exported.samples, origin=origin)
    return store.run(exported.run.id)


def read_export(folder: Path) -> ExportedRun:
    """The run exported to `folder` (`results.json` + `samples.jsonl`)."""
    results, samples_path = export_files(folder)
    with samples_path.open("rb") as samples:
        return parse_export(results.read_bytes(), samples, str(folder))


def export_files(folder: Path) -> tuple[Path, Path]:
    """`folder`'s results and samples files; NoExport when either is missing."""
    results_path = folder / RESULTS_FILE
    samples_path = folder / SAMPLES_FILE
    for path in (results_path, samples_path):
        if not path.is_file():
            raise NoExport(f"{path}: missing; `redline import` expects a `redline export` folder")
    return results_path, samples_path


def read_zip(file: Path | IO[bytes], where: str) -> list[ExportedRun]:
    """Every export in a zip (a CI artifact): each folder of it holding both export files.

    Read from the archive in memory, nothing unpacked to disk.
    """
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ExportUnreadable(f"{where}: not a readable zip file ({exc})") from None
    with archive:
        names = {
            n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX/")
        }
        prefixes = sorted(
            n[: -len(RESULTS_FILE)]
            for n in names
            if n == RESULTS_FILE or n.endswith("/" + RESULTS_FILE)
        )
        if not prefixes:
            raise NoExport(
                f"{where}: no {RESULTS_FILE} in the zip; it holds no `redline export` of a run"
            )
        found = []
        for prefix in prefixes:
            inside = f"{where}:{prefix}" if prefix else where
            if prefix + SAMPLES_FILE not in names:
                raise ExportUnreadable(f"{inside}: {RESULTS_FILE} without {SAMPLES_FILE} beside it")
            try:
                results = archive.read(prefix + RESULTS_FILE)
                with archive.open(prefix + SAMPLES_FILE) as samples:
                    found.append(parse_export(results, samples, inside))
            except (zipfile.BadZipFile, zlib.error, OSError) as exc:
                raise ExportUnreadable(f"{inside}: damaged zip entry ({exc})") from None
        return found


def export_paths(path: Path) -> list[Path]:
    """The exports `path` names: an export folder, a zip, or a folder of several of them."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"{path}: no such file or folder")
    if (path / RESULTS_FILE).is_file():
        return [path]
    found = sorted(
        {p.parent for p in path.rglob(RESULTS_FILE) if p.is_file()}
        | {p for p in path.rglob("*.zip") if p.is_file()}
    )
    if not found:
        raise NoExport(
            f"{path}: no `redline export` in it (a folder with {RESULTS_FILE} and "
            f"{SAMPLES_FILE}, or a zip of one)"
        )
    return found


def read_exports(path: Path) -> list[ExportedRun]:
    """The runs exported at `path`: an export folder, or a zip holding one or more."""
    if path.is_dir():
        return [read_export(path)]
    return read_zip(path, str(path))


def parse_export(results_bytes: bytes, samples: Iterable[bytes], where: str) -> ExportedRun:
    """An export from the bytes of its `results.json` and the lines of its `samples.jsonl`."""
    run, cases = parse_results(results_bytes, where)
    parsed = tuple(s for _, s in parse_samples(samples, run.id, where))
    return ExportedRun(run, cases, parsed, where)


def parse_results(results_bytes: bytes, where: str) -> tuple[RunRecord, tuple[CaseRecord, ...]]:
    """The run and case results of an export's `results.json` (`where` names the export)."""
    results_where = f"{where}/{RESULTS_FILE}"
    try:
        results = json.loads(results_bytes.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExportUnreadable(f"{results_where}: not valid JSON: {exc}") from None
    if not isinstance(results, dict) or results.get("format") != FORMAT:
        raise ExportUnreadable(f"{results_where}: not a redline run export (format {FORMAT!r})")
    if results.get("format_version") != FORMAT_VERSION:
        raise ExportUnreadable(
            f"{results_where}: export format version {results.get('format_version')!r}; "
            f"this redline reads version {FORMAT_VERSION}"
        )
    try:
        run = _run_from_json(results["run"], results.get("manifest", {}))
        cases = tuple(_case_from_json(c, run.id) for c in results["cases"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportUnreadable(f"{results_where}: malformed export: {exc!r}") from None
    return run, cases


def parse_samples(
    lines: Iterable[bytes], run_id: str, where: str
) -> Iterator[tuple[bytes, SampleRecord]]:
    """Each line of a `samples.jsonl` with the sample it holds (in run `run_id`), read as
    it is reached: ExportUnreadable names the file and line of the first malformed one."""
    return _parse_lines(lines, where, lambda data: _sample_from_json(data, run_id))


def parse_stored_samples(
    lines: Iterable[bytes], run_id: str, where: str
) -> Iterator[tuple[bytes, StoredSample]]:
    """`parse_samples`, each sample as the store's rows (checked the same, faster to store)."""
    return _parse_lines(lines, where, lambda data: StoredSample.from_json(data, run_id))


def _parse_lines(
    lines: Iterable[bytes], where: str, read: Callable[[Any], _S]
) -> Iterator[tuple[bytes, _S]]:
    samples_where = f"{where}/{SAMPLES_FILE}"
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            sample = read(json.loads(line.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ExportUnreadable(f"{samples_where}:{lineno}: malformed sample: {exc!r}") from None
        yield line, sample


def _json_line(data: Mapping[str, Any]) -> str:
    try:
        line = json.dumps(data, ensure_ascii=False)
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (valid JSON escape, not encodable as UTF-8): keep it as \\uXXXX.
        line = json.dumps(data, ensure_ascii=True)
    return line


def run_json(run: RunRecord) -> dict[str, Any]:
    return record_json(run)


def _run_from_json(data: Mapping[str, Any], manifest: Mapping[str, Any]) -> RunRecord:
    return record_from_json(RunRecord, data, manifest={str(k): str(v) for k, v in manifest.items()})


def case_json(c: CaseRecord) -> dict[str, Any]:
    return record_json(c) | {"ok": c.result is CaseOutcome.PASS}


def _case_from_json(data: Mapping[str, Any], run_id: str) -> CaseRecord:
    return record_from_json(CaseRecord, data, run_id=run_id)


def sample_json(s: SampleRecord) -> dict[str, Any]:
    return record_json(s)


def _sample_from_json(data: Mapping[str, Any], run_id: str) -> SampleRecord:
    return record_from_json(SampleRecord, data, run_id=run_id)
