"""Every record field survives the store, `redline export` / `redline import`, a CI pull's
import and a replay — including a field added later, by one declaration in records.py."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest

from redline.cli import main
from redline.running.exchange import (
    add_export,
    read_zip,
    record_from_json,
    record_json,
    sample_json,
)
from redline.running.replay import ReplayProvider
from redline.running.rows import Table
from redline.running.store import RunStore, StoredSample
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.messages import Step, ToolCall, ToolResult
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    FieldKind,
    RecordField,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
    record_fields,
)
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict
from runfactory import write_config

RUN = "feedc0ffee01"
_CALLS = (
    ToolCall("c1", "lookup", '{"order": "A-1", "note": "[bold]x[/] ünï"}'),
    ToolCall("c2", "refund", "{not json"),
)
#: Values a store or an export could mangle: a lone surrogate, NUL, markup, newlines.
AWKWARD = "line 1\n[bold]x[/] \x00 \ud800 ünï"


def _value(f: RecordField, n: int) -> Any:
    """A value for `f` unlike its default, so a field that is dropped anywhere shows."""
    if f.kind is FieldKind.BOOL:
        return not f.default if not f.required else True
    if f.kind is FieldKind.ENUM:
        members: list[Any] = list(f.type)  # type: ignore[call-overload]
        return next(m for m in reversed(members) if m != f.default)
    if f.kind is FieldKind.STRINGS:
        return ("cases/a", "cases/b")
    if f.kind is FieldKind.MAPPING:
        return {"nested": {"list": [1, 2]}, "n": n}
    if f.kind is FieldKind.COUNTS:
        return {v: i + 1 for i, v in enumerate(Verdict)}
    if f.kind is FieldKind.RECORDS and f.type is ToolCall:
        return _CALLS
    if f.kind is FieldKind.RECORDS and f.type is Step:
        return (
            Step("", FinishReason.TOOL_CALLS, _CALLS, (ToolResult("c1", "lookup", AWKWARD),), 9),
            Step(AWKWARD, FinishReason.STOP, latency_ms=3.5, cost=0.25),
        )
    if f.kind is FieldKind.RECORDS:
        return (
            AssertionResult(0, "contains", AssertionStatus.PASSED, "found", 0.75, 0.5, True),
            AssertionResult(1, "regex", AssertionStatus.FAILED, "no match:\n[bold]x[/] ünï"),
        )
    if f.type is int:
        return 1000 + n
    if f.type is float:
        return 12.5 + n
    return AWKWARD if f.exact else f"{f.name}-{n}"


def _full(cls: type[Any], **given: Any) -> Any:
    """A record with every field set to a non-default value (`given` ones as they are)."""
    values = {f.name: _value(f, i) for i, f in enumerate(record_fields(cls)) if f.name not in given}
    return cls(**values, **given)


def _records() -> tuple[RunRecord, CaseRecord, SampleRecord]:
    run = _full(
        RunRecord,
        id=RUN,
        kind=RunKind.RUN,
        status=RunStatus.FINISHED,
        result=RunResult.RED,
        parent_id=None,
        manifest={"cases/a/suite.yaml": "a" * 64},
    )
    case = _full(
        CaseRecord, run_id=RUN, suite="a", case_id="c1", result=CaseOutcome.FAIL, samples=21
    )
    sample = _full(
        SampleRecord, run_id=RUN, suite="a", case_id="c1", index=3, verdict=Verdict.WRONG
    )
    return run, case, sample


def _store(path: Path) -> RunStore:
    run, case, sample = _records()
    store = RunStore.open(path)
    store.add_run(run, [case], [sample])
    return store


def test_every_field_round_trips_through_store_export_import_pull_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run, case, sample = _records()
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / ".redline" / "redline.db"
    with _store(db) as store:
        assert store.run(RUN) == run
        assert store.cases(RUN) == [case]
        assert store.samples(RUN) == [sample]
        replayed = ReplayProvider(store, RUN).stored("a", "c1", 3)
    # Replay serves every answer field of the sample, raw output untouched.
    assert replayed == sample.as_answer()
    assert replayed.text == AWKWARD
    answer = [f for f in record_fields(SampleRecord) if f.answer]
    assert {f.answer for f in answer} >= {
        "text",
        "finish_reason",
        "cost",
        "attempts",
        "stopped_early",
    }
    for f in answer:
        assert getattr(replayed, f.answer) == getattr(sample, f.name), f.name
        assert getattr(replayed, f.answer) != getattr(Completion("", None), f.answer), f.name

    out = tmp_path / "export"
    assert main(["export", RUN, "--out", str(out)]) == 0
    db.rename(tmp_path / "first.db")
    assert main(["import", str(out)]) == 0, capsys.readouterr().err
    with RunStore.open(db) as imported:
        assert imported.run(RUN) == run
        assert imported.cases(RUN) == [case]
        assert imported.samples(RUN) == [sample]

    # A CI pull reads the export from the artifact zip, in memory.
    artifact = io.BytesIO()
    with zipfile.ZipFile(artifact, "w") as z:
        for name in ("results.json", "samples.jsonl"):
            z.write(out / name, f"redline-run/{name}")
    artifact.seek(0)
    [exported] = read_zip(artifact, "artifact.zip")
    with RunStore.open(tmp_path / "pulled.db") as pulled:
        add_export(pulled, exported)
        assert pulled.run(RUN) == run
        assert pulled.cases(RUN) == [case]
        assert pulled.samples(RUN) == [sample]


@dataclass(frozen=True)
class _LaterSample(SampleRecord):
    """A sample as it would be with one more optional field: its one declaration."""

    reasoning_tokens: int | None = None


def test_a_field_added_later_gets_its_column_key_and_defaults_from_its_declaration(
    tmp_path: Path,
) -> None:
    _, _, sample = _records()
    # A store made before the field existed: no column for it, one sample stored.
    with _store(tmp_path / "old.db"):
        pass
    table = Table(_LaterSample, "samples")
    db = sqlite3.connect(tmp_path / "old.db")
    table.add_missing_columns(db)
    assert "reasoning_tokens" in {r[1] for r in db.execute("PRAGMA table_info(samples)")}
    [old_row] = db.execute(f"SELECT {table.select()} FROM samples").fetchall()
    # The row stored before reads back with the new field at its default.
    assert table.read(old_row, assertions=()) == _LaterSample(
        **{f.name: getattr(sample, f.name) for f in fields(sample)} | {"assertions": ()}
    )
    later = _LaterSample(
        **{f.name: getattr(sample, f.name) for f in fields(sample)}, reasoning_tokens=77
    )
    db.execute(table.insert(), table.row(replace(later, index=4)))
    rows = db.execute(f"SELECT {table.select()} FROM samples ORDER BY idx").fetchall()
    assert table.read(rows[1], assertions=later.assertions) == replace(later, index=4)
    db.close()

    # The export writes it; an export made before the field existed reads as the default.
    data = record_json(later)
    assert data["reasoning_tokens"] == 77
    assert record_from_json(_LaterSample, data, run_id=RUN) == later
    del data["reasoning_tokens"]
    assert record_from_json(_LaterSample, data, run_id=RUN).reasoning_tokens is None


def test_a_store_missing_a_column_of_a_record_field_gains_it_when_opened(tmp_path: Path) -> None:
    """The migration is derived too: an older store without `git_branch` or `seed` opens."""
    path = tmp_path / "old.db"
    with _store(path):
        pass
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE runs DROP COLUMN git_branch")
    db.execute("DROP INDEX samples_by_case")
    db.execute("ALTER TABLE samples DROP COLUMN seed")
    db.commit()
    db.close()
    run, _, sample = _records()
    with RunStore.open(path) as store:
        assert store.run(RUN) == replace(run, git_branch=None)
        assert store.samples(RUN) == [replace(sample, seed=None)]


def test_an_export_of_an_older_redline_without_optional_keys_imports_with_defaults() -> None:
    minimal = {"suite": "a", "case_id": "c", "index": 0, "output": "x", "verdict": "ok"}
    minimal["finish_reason"] = None
    sample = record_from_json(SampleRecord, minimal, run_id=RUN)
    assert sample == SampleRecord(RUN, "a", "c", 0, "x", Verdict.OK, None)
    with pytest.raises(KeyError):
        record_from_json(SampleRecord, {"suite": "a"}, run_id=RUN)
    with pytest.raises(TypeError):
        record_from_json(SampleRecord, minimal | {"output": 3}, run_id=RUN)


def _json_line(sample: SampleRecord) -> dict[str, Any]:
    """A sample as an export's line reads back (its text through JSON)."""
    return dict(json.loads(json.dumps(sample_json(sample))))


def test_an_export_line_is_stored_as_the_rows_its_record_is() -> None:
    """A merge stores each line's rows without building its record: the same rows, for a
    sample with every field set (lone surrogate, tool calls, loop steps) and a bare one."""
    _, _, full = _records()
    bare = SampleRecord(RUN, "a", "c2", 0, "ok", Verdict.OK, FinishReason.STOP)
    for sample in (full, bare):
        assert StoredSample.from_json(_json_line(sample), RUN) == StoredSample.of(sample)


def test_an_export_writes_each_sample_as_the_json_of_its_stored_record(tmp_path: Path) -> None:
    """The export reads its lines from the rows without building the records: the same
    JSON, key for key and in order, for a sample with every field set (lone surrogate,
    tool calls, loop steps, sparse fields), a bare one and one without an answer."""
    run, case, full = _records()
    bare = SampleRecord(RUN, "a", "c2", 0, "ok", Verdict.OK, FinishReason.STOP)
    unanswered = SampleRecord(RUN, "a", "c2", 1, "", Verdict.TRANSPORT, None, error="refused")
    with RunStore.open(tmp_path / "s.db") as store:
        store.add_run(run, [case], [full, bare, unanswered])
        streamed = [json.dumps(data) for data in store.iter_sample_json(RUN)]
        expected = [json.dumps(sample_json(s)) for s in store.samples(RUN)]
    assert streamed == expected and len(streamed) == 3


@pytest.mark.parametrize(
    "change",
    [
        {"verdict": "splendid"},
        {"output": 42},
        {"index": "three"},
        {"finish_reason": "sideways"},
        {"assertions": [{"index": 0, "type": "contains"}]},
        {"assertions": [{"index": 0, "type": "contains", "status": "maybe", "reason": ""}]},
        {"tool_calls": [{"id": "c1"}]},
        {"attempts": None},
    ],
)
def test_a_malformed_export_line_is_refused_as_reading_its_record_refuses_it(
    change: dict[str, Any],
) -> None:
    _, _, full = _records()
    data = _json_line(full) | change
    with pytest.raises((KeyError, TypeError, ValueError)) as as_record:
        record_from_json(SampleRecord, data, run_id=RUN)
    with pytest.raises(as_record.type):
        StoredSample.from_json(data, RUN)


def test_an_export_line_missing_a_required_key_or_not_an_object_is_refused() -> None:
    data = _json_line(_records()[2])
    del data["verdict"]
    with pytest.raises(KeyError, match="verdict"):
        StoredSample.from_json(data, RUN)
    with pytest.raises(TypeError, match="JSON object"):
        StoredSample.from_json([1, 2], RUN)  # type: ignore[arg-type]
