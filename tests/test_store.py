import sqlite3
from pathlib import Path

import pytest

from redline.errors import UsageError
from redline.running.store import RunStore
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict


def make_run(run_id: str, started: str, kind: RunKind = RunKind.RUN, **kw: object) -> RunRecord:
    return RunRecord(
        id=run_id,
        kind=kind,
        status=RunStatus.RUNNING,
        result=None,
        started_at=started,
        finished_at=None,
        model_id="openai:m-2024-01-01",
        model_alias="default",
        suites=("s",),
        manifest={"s/suite.yaml": "ab" * 32, "model": "openai:m-2024-01-01"},
        args={"samples": 5},
        **kw,  # type: ignore[arg-type]
    )


def make_case(run_id: str, case_id: str, passes: int, result: CaseOutcome) -> CaseRecord:
    return CaseRecord(
        run_id=run_id,
        suite="s",
        case_id=case_id,
        tier="contract",
        model_id="openai:m-2024-01-01",
        samples=5,
        required=5,
        passes=passes,
        result=result,
        verdicts={Verdict.OK: passes, Verdict.WRONG: 5 - passes},
        case_hash="cd" * 32,
    )


def test_samples_round_trip_exactly_with_assertions(tmp_path: Path) -> None:
    raw = "Here is \x1b[31mred\x1b[0m [bold]x[/bold]\x00 \r\n\ttail \ud83d"
    with RunStore.open(tmp_path / "deep" / "r.db") as store:
        store.begin_run(make_run("abc123", "2026-01-01T00:00:00.000+00:00"))
        result = AssertionResult(
            index=0,
            type="compression-ratio",
            status=AssertionStatus.FAILED,
            reason="ratio 0.1 < 0.35",
            score=0.1,
            threshold=0.35,
        )
        sample = SampleRecord(
            run_id="abc123",
            suite="s",
            case_id="c1",
            index=0,
            output=raw,
            verdict=Verdict.WRONG,
            finish_reason=FinishReason.STOP,
            model="m",
            seed=7,
            latency_ms=12.5,
            input_tokens=3,
            output_tokens=4,
            cost=0.001,
            attempts=2,
            assertions=(result,),
            created_at="2026-01-01T00:00:01.000+00:00",
        )
        store.add_sample(sample)
    with RunStore.open(tmp_path / "deep" / "r.db") as store:
        [back] = store.samples("abc123", "c1")
        assert back == sample
        assert store.sample_keys("abc123") == {("s", "c1", 0)}
        assert store.run("abc").manifest["model"] == "openai:m-2024-01-01"


def test_history_is_oldest_first_and_runs_newest_first(tmp_path: Path) -> None:
    with RunStore.open(tmp_path / "r.db") as store:
        for n, (rid, kind) in enumerate(
            [("aa01", RunKind.RUN), ("aa02", RunKind.RERUN), ("bb03", RunKind.RUN)]
        ):
            store.begin_run(make_run(rid, f"2026-01-0{n + 1}T00:00:00.000+00:00", kind))
            store.put_case(
                make_case(rid, "c1", 5 - n, CaseOutcome.PASS if n == 0 else CaseOutcome.FAIL)
            )
            store.finish_run(
                rid,
                RunStatus.FINISHED,
                RunResult.GREEN if n == 0 else RunResult.RED,
                f"2026-01-0{n + 1}T00:01:00.000+00:00",
            )
        assert [r.id for r in store.runs()] == ["bb03", "aa02", "aa01"]
        assert [r.id for r in store.runs(kind=RunKind.RUN, limit=1)] == ["bb03"]
        history = store.case_history("c1", suite="s")
        assert [(r.id, c.passes) for r, c in history] == [("aa01", 5), ("aa02", 4), ("bb03", 3)]
        assert history[1][0].kind is RunKind.RERUN
        latest = store.latest_run()
        assert latest is not None and latest.id == "bb03"
        green = store.latest_run(result=RunResult.GREEN)
        assert green is not None and green.id == "aa01"
        [case] = store.cases("aa02")
        assert case.verdicts[Verdict.WRONG] == 1 and case.verdicts[Verdict.TRANSPORT] == 0
        with pytest.raises(UsageError, match="ambiguous"):
            store.run("aa")
        with pytest.raises(UsageError, match="no run"):
            store.run("zz")
        with pytest.raises(UsageError, match="already"):
            store.begin_run(make_run("aa01", "2026-01-05T00:00:00.000+00:00"))


def test_store_uses_wal_and_indexes(tmp_path: Path) -> None:
    RunStore.open(tmp_path / "r.db").close()
    db = sqlite3.connect(tmp_path / "r.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    plan = " ".join(
        str(r) for r in db.execute("EXPLAIN QUERY PLAN SELECT * FROM cases WHERE case_id = 'x'")
    )
    assert "cases_by_case" in plan


def test_export_import_round_trip_is_exact(tmp_path: Path) -> None:
    from redline.running.exchange import export_run, import_run

    raw = 'Here is {"a": 1}\x1b[0m\x00\r\n\u202e\ud800 tail'
    with RunStore.open(tmp_path / "a.db") as source:
        source.begin_run(make_run("feed01", "2026-01-01T00:00:00.000+00:00"))
        sample = SampleRecord(
            run_id="feed01",
            suite="s",
            case_id="c1",
            index=3,
            output=raw,
            verdict=Verdict.MALFORMED,
            finish_reason=FinishReason.STOP,
            assertions=(
                AssertionResult(
                    index=0,
                    type="is-json",
                    status=AssertionStatus.FAILED,
                    reason="Expecting value",
                    structural=True,
                ),
            ),
            created_at="2026-01-01T00:00:02.000+00:00",
        )
        source.add_sample(sample)
        source.put_case(make_case("feed01", "c1", 0, CaseOutcome.FAIL))
        source.finish_run(
            "feed01", RunStatus.FINISHED, RunResult.RED, "2026-01-01T00:01:00.000+00:00"
        )
        export_run(source, "feed", tmp_path / "out")
        original = (source.run("feed01"), source.cases("feed01"), source.samples("feed01"))
    with RunStore.open(tmp_path / "b.db") as target:
        imported = import_run(target, tmp_path / "out")
        assert (imported, target.cases("feed01"), target.samples("feed01")) == original
        assert target.samples("feed01")[0].output == raw
        with pytest.raises(UsageError, match="already in the store"):
            import_run(target, tmp_path / "out")
        assert len(target.samples("feed01")) == 1
