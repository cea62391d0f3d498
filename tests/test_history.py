"""Per-case history: series, reruns apart, change marks, sparkline, marginal detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main
from redline.deciding.history import HistoryPoint, case_history, find_marginal, sparkline
from redline.errors import UsageError
from redline.vocabulary.records import CaseOutcome, RunKind
from runfactory import OK, TRANSPORT, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run


def _day(d: int) -> str:
    return f"2026-02-{d:02d}T03:00:00.000+00:00"


def _point(passes: int, samples: int = 5, required: int = 4, case_hash: str = "h") -> HistoryPoint:
    result = CaseOutcome.PASS if passes >= required else CaseOutcome.FAIL
    return HistoryPoint(
        "r", RunKind.RUN, None, _day(1), "m", samples, passes, required, result, case_hash
    )


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    four = [OK, OK, OK, OK, WRONG]
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("n1", [CaseSpec("edge", [OK] * 5)], started_at=_day(1)))
        write_run(store, RunSpec("n2", [CaseSpec("edge", four)], started_at=_day(2)))
        write_run(
            store,
            RunSpec(
                "n3", [CaseSpec("edge", [OK] * 5)], started_at=_day(3), model_id="local:model-b"
            ),
        )
        write_run(
            store,
            RunSpec(
                "rr1",
                [CaseSpec("edge", [OK] * 20)],
                started_at=_day(3).replace("03:00", "09:00"),
                kind=RunKind.RERUN,
                parent_id="n3",
            ),
        )
        write_run(
            store,
            RunSpec(
                "n4",
                [CaseSpec("edge", four)],
                started_at=_day(4),
                model_id="local:model-b",
            ),
        )
        write_run(
            store,
            RunSpec("other", [CaseSpec("edge", [OK] * 5, suite="suite-b")], started_at=_day(5)),
        )
    return tmp_path


def test_series_is_oldest_first_with_reruns_apart_and_changes_marked(repo: Path) -> None:
    with open_store(repo) as store:
        h = case_history(store, "edge", "suite-a")
    assert [p.run_id for p in h.scheduled] == ["n1", "n2", "n3", "n4"]
    assert [p.passes for p in h.scheduled] == [5, 4, 5, 4]
    assert [p.model_changed for p in h.scheduled] == [False, False, True, False]
    assert [(p.run_id, p.kind, p.parent_id) for p in h.reruns] == [("rr1", RunKind.RERUN, "n3")]


def test_case_in_two_suites_needs_suite(repo: Path) -> None:
    with open_store(repo) as store, pytest.raises(UsageError, match="--suite"):
        case_history(store, "edge")
    with open_store(repo) as store, pytest.raises(UsageError, match="no stored result"):
        case_history(store, "missing")


def test_marginal_needs_k_consecutive_runs_at_the_edge() -> None:
    assert find_marginal([_point(5), _point(4)], runs=3) is None
    m = find_marginal([_point(1), _point(5), _point(4), _point(3)], runs=3)
    assert m is not None
    assert (m.runs, m.pooled_passes, m.pooled_samples) == (3, 12, 15)
    assert m.threshold == pytest.approx(0.8)
    assert m.samples_needed is None  # pooled 80% sits exactly on the 4/5 bar
    m = find_marginal([_point(5), _point(4), _point(5), _point(4), _point(5)], runs=3)
    assert m is not None and m.runs == 5 and m.samples_needed == 43  # pooled 23/25 vs 4/5
    # Every sample passing every night is solid, even when the bar is "all samples".
    assert find_marginal([_point(5), _point(5), _point(5)], runs=3) is None
    # An older run far from the bar breaks the streak; a case-file change restarts it.
    assert find_marginal([_point(5), _point(1), _point(4), _point(4)], runs=3) is None
    assert (
        find_marginal([_point(4), _point(4, case_hash="new"), _point(4, case_hash="new")], 3)
        is None
    )


def test_sparkline() -> None:
    assert sparkline([0.0, 0.5, 1.0, None]) == "▁▅█·"
    assert sparkline([]) == ""


def test_history_cli(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "edge", "--suite", "suite-a"]) == 0
    out = capsys.readouterr().out
    assert "█▇█▇" in out
    assert "model changed" in out
    assert "reruns and replays" in out and "rr1" in out
    assert "marginal" in out and "samples needed" in out and "per run" in out
    assert main(["history", "edge"]) == 2


def test_history_cli_not_marginal(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_store(repo) as store:
        write_run(store, RunSpec("n5", [CaseSpec("edge", [WRONG] * 5)], started_at=_day(6)))
        write_run(store, RunSpec("n6", [CaseSpec("edge", [TRANSPORT] * 5)], started_at=_day(7)))
    assert main(["history", "edge", "--suite", "suite-a"]) == 0
    out = capsys.readouterr().out
    assert "not marginal" in out
    assert "█▇█▇▁·" in out


def test_history_cli_keeps_run_ids_whole_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A CI log or a pipe renders at 80 columns; the ids are what the reader copies.
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    model = "openai:gpt-4.1-mini-2025-04-14"
    with open_store(tmp_path) as store:
        for i, run_id in enumerate(("1aca46244914", "ddb1fe0e8a2c"), start=1):
            spec = RunSpec(run_id, [CaseSpec("0042-amount-suffix", [OK] * 5)], model_id=model)
            spec.started_at = _day(i)
            write_run(store, spec)
        rerun = RunSpec("92688b27b9f8", [CaseSpec("0042-amount-suffix", [OK] * 20)])
        rerun.kind, rerun.parent_id, rerun.started_at = RunKind.RERUN, "ddb1fe0e8a2c", _day(3)
        write_run(store, rerun)
    assert main(["history", "0042-amount-suffix"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    for run_id in ("1aca46244914", "ddb1fe0e8a2c", "92688b27b9f8"):
        assert run_id in out


def test_a_case_named_suite_slash_case_as_reports_print_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`history suite-a/edge` is `history edge --suite suite-a`: the form run summaries,
    reports and `show` print when suites share case ids."""
    with open_store(repo) as store:
        named = case_history(store, "suite-a/edge")
        assert named == case_history(store, "edge", "suite-a")
        assert case_history(store, "suite-b/edge").suite == "suite-b"
        with pytest.raises(UsageError, match="SUITE/edge"):
            case_history(store, "edge")
    assert main(["history", "suite-a/edge", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["suite"], shown["case_id"]) == ("suite-a", "edge")
    assert [p["run_id"] for p in shown["scheduled"]] == ["n1", "n2", "n3", "n4"]
