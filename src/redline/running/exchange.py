"""Move runs between stores: `results.json` + `samples.jsonl` in a folder or a zip (CI artifacts).

The export is complete (run, manifest, case results, every sample with its assertion
results), so importing it back gives the same records, raw outputs byte for byte.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from redline.errors import ExportUnreadable, NoExport, RunAlreadyStored, UsageError
from redline.running.recordjson import record_from_json, record_json
from redline.running.store import RunStore
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


def check_out_dir(out: Path) -> None:
    """A usage error when `out` cannot be the folder an export is written to."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder; give a folder for the export")


def export_run(store: RunStore, run_id: str, out: Path) -> Path:
    """Write the run to `out/results.json` and `out/samples.jsonl`; returns `out`."""
    run = store.run(run_id)
    cases = store.cases(run.id)
    samples = store.samples(run.id)
    check_out_dir(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot create the export folder: {exc.strerror}") from None
    totals = dict.fromkeys(VERDICT_ORDER, 0)
    for c in cases:
        for v, n in c.verdicts.items():
            totals[v] += n
    results = {
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
            "samples": len(samples),
            "verdicts": {str(v): n for v, n in totals.items()},
        },
        "cases": [case_json(c) for c in cases],
        "manifest": dict(sorted(run.manifest.items())),
    }
    (out / RESULTS_FILE).write_text(
        json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with (out / SAMPLES_FILE).open("w", encoding="utf-8", newline="\n") as fh:
        for s in samples:
            fh.write(_json_line(sample_json(s)))
            fh.write("\n")
    return out


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
    results_path = folder / RESULTS_FILE
    samples_path = folder / SAMPLES_FILE
    for path in (results_path, samples_path):
        if not path.is_file():
            raise NoExport(f"{path}: missing; `redline import` expects a `redline export` folder")
    with samples_path.open("rb") as samples:
        return parse_export(results_path.read_bytes(), samples, str(folder))


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
    results_where = f"{where}/{RESULTS_FILE}"
    samples_where = f"{where}/{SAMPLES_FILE}"
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
    parsed: list[SampleRecord] = []
    for lineno, line in enumerate(samples, start=1):
        if not line.strip():
            continue
        try:
            parsed.append(_sample_from_json(json.loads(line.decode("utf-8")), run.id))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ExportUnreadable(f"{samples_where}:{lineno}: malformed sample: {exc!r}") from None
    return ExportedRun(run, cases, tuple(parsed), where)


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
