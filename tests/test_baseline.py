"""Baselines: golden choice, save/load, regression, score drop (10% boundary), case changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main
from redline.deciding.baseline import (
    CaseStatus,
    choose_golden,
    compare_run_with_baselines,
    golden_diff,
    load_baseline,
    sample_golden_diff,
    save_baselines,
    score_drops,
)
from redline.errors import UsageError
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.records import RunKind, RunStatus, SampleRecord
from redline.vocabulary.verdicts import Verdict
from runfactory import OK, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run

TYPICAL = [
    "The total is 12500000 rupiah, thanks.",  # 0
    "The total is 12500000 rupiah, due soon.",  # 1
    "Here is a poem about invoices instead.",  # 2 the outlier
    "The total is 12500000 rupiah,",  # 3 closest to everyone
    "The total is 12500000 rupiah, regards.",  # 4
]


def _samples(outputs: list[str], verdicts: list[Verdict] | None = None) -> list[SampleRecord]:
    verdicts = verdicts or [Verdict.OK] * len(outputs)
    return [
        SampleRecord("r", "s", "c", i, out, v, FinishReason.STOP)
        for i, (out, v) in enumerate(zip(outputs, verdicts, strict=True))
    ]


def test_golden_is_the_most_typical_ok_sample_whatever_the_order() -> None:
    samples = _samples(TYPICAL)
    golden = choose_golden(samples)
    assert golden is not None and golden.index == 3
    again = choose_golden(list(reversed(samples)))
    assert again is not None and again.index == 3


def test_golden_ignores_failing_samples_and_breaks_ties_by_lowest_index() -> None:
    verdicts = [Verdict.WRONG, Verdict.OK, Verdict.OK, Verdict.WRONG, Verdict.OK]
    golden = choose_golden(_samples(TYPICAL, verdicts))
    assert golden is not None and golden.index == 4
    tie = choose_golden(_samples(["same answer", "same answer", "same answer"]))
    assert tie is not None and tie.index == 0
    assert choose_golden(_samples(["x"], [Verdict.WRONG])) is None


def test_score_drop_boundary_is_strict() -> None:
    assert score_drops({"0:mentions": 0.5}, {"0:mentions": 0.45}, 0.10) == []
    drops = score_drops({"0:mentions": 0.5}, {"0:mentions": 0.4495}, 0.10)
    assert [d.key for d in drops] == ["0:mentions"]
    assert drops[0].relative == pytest.approx(-0.101)
    # not-mentions: lower is better, so a rise beyond the threshold is the drop.
    assert score_drops({"1:not-mentions": 0.2}, {"1:not-mentions": 0.22}, 0.10) == []
    assert len(score_drops({"1:not-mentions": 0.2}, {"1:not-mentions": 0.221}, 0.10)) == 1
    assert len(score_drops({"4:judge": 4.0}, {"4:judge": 3.0}, 0.10)) == 1


def test_budgets_and_heuristics_passing_are_never_score_drops() -> None:
    """max-words 82 → 104 under a cap of 150 is a longer answer, not a worse one."""
    base = {
        "2:max-words": 82.0,
        "3:max-chars": 200.0,
        "4:max-latency-ms": 100.0,
        "5:max-cost": 0.001,
        "6:compression-ratio": 0.5,
        "7:distinct-n": 0.9,
    }
    now = {
        "2:max-words": 104.0,
        "3:max-chars": 400.0,
        "4:max-latency-ms": 900.0,
        "5:max-cost": 0.01,
        "6:compression-ratio": 0.3,
        "7:distinct-n": 0.7,
    }
    assert score_drops(base, now, 0.10) == []


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    with open_store(tmp_path) as store:
        write_run(
            store,
            RunSpec(
                "base1",
                [
                    CaseSpec("stays", [OK] * 5, scores=[0.5] * 5),
                    CaseSpec("breaks", [OK] * 5, scores=[0.5] * 5),
                    CaseSpec("drops", [OK] * 5, scores=[0.5] * 5),
                    CaseSpec("edited", [OK] * 5),
                    CaseSpec("retired", [OK] * 5),
                    CaseSpec("fixed", [WRONG] * 5),
                ],
            ),
        )
        write_run(
            store,
            RunSpec(
                "next1",
                [
                    # exactly 10% lower: not a drop
                    CaseSpec("stays", [OK] * 5, scores=[0.45] * 5),
                    CaseSpec("breaks", [OK, WRONG, WRONG, OK, OK], scores=[0.5] * 5),
                    CaseSpec("drops", [OK] * 5, scores=[0.4] * 5),
                    CaseSpec("edited", [WRONG] * 5, case_hash="hash-2"),
                    CaseSpec("fixed", [OK] * 5),
                    CaseSpec("brand-new", [OK] * 5),
                ],
                started_at="2026-01-02T00:00:00.000+00:00",
            ),
        )
    return tmp_path


def test_save_writes_one_stable_file_per_suite(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    path = repo / "baselines" / "suite-a.json"
    first = path.read_bytes()
    data = json.loads(first)
    assert list(data["cases"]) == sorted(data["cases"])
    stays = data["cases"]["stays"]
    assert stays["passes"] == 5 and stays["samples"] == 5 and stays["result"] == "pass"
    assert stays["scores"] == {"0:mentions": 0.5}
    assert stays["model_id"] == "local:model-a" and stays["case_hash"] == "hash-1"
    assert stays["golden"] == {"sample_index": 0, "output": "stays answer 0"}
    assert data["cases"]["fixed"]["golden"] is None
    assert main(["baseline", "save", "base1"]) == 0
    assert path.read_bytes() == first


def test_compare_statuses(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    with open_store(repo) as store:
        result = compare_run_with_baselines(store, "next1", repo / "baselines")
    status = {c.case_id: c.status for c in result.cases}
    assert status == {
        "stays": CaseStatus.UNCHANGED,
        "breaks": CaseStatus.REGRESSION,
        "drops": CaseStatus.SCORE_DROP,
        "edited": CaseStatus.CASE_CHANGED,
        "retired": CaseStatus.REMOVED,
        "fixed": CaseStatus.IMPROVED,
        "brand-new": CaseStatus.NEW,
    }
    assert {c.case_id for c in result.regressions} == {"breaks", "drops"}


def test_compare_cli_exit_codes_and_threshold(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    assert main(["baseline", "compare", "next1"]) == 1
    out = capsys.readouterr().out
    assert "regression" in out and "case changed" in out and "score drop" in out
    assert main(["baseline", "compare", "base1"]) == 0
    # `breaks` is still a pass→fail regression at any score threshold.
    assert main(["baseline", "compare", "next1", "--score-drop", "0.5"]) == 1
    assert main(["baseline", "compare", "next1", "--score-drop", "1.5"]) == 2


def test_case_changed_is_never_a_regression(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    with open_store(repo) as store:
        write_run(
            store,
            RunSpec(
                "edit-only",
                [
                    CaseSpec("stays", [OK] * 5, scores=[0.5] * 5),
                    CaseSpec("breaks", [WRONG] * 5, case_hash="hash-2", scores=[0.1] * 5),
                ],
                started_at="2026-01-03T00:00:00.000+00:00",
            ),
        )
    assert main(["baseline", "compare", "edit-only"]) == 0


def test_save_one_case_keeps_the_others(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    assert main(["baseline", "save", "next1", "--case", "edited"]) == 0
    baseline = load_baseline(repo / "baselines", "suite-a")
    assert baseline is not None
    assert baseline.cases["edited"].case_hash == "hash-2"
    assert baseline.cases["edited"].run_id == "next1"
    assert baseline.cases["stays"].run_id == "base1"
    assert "brand-new" not in baseline.cases
    with pytest.raises(UsageError, match="no case"), open_store(repo) as store:
        save_baselines(store, "next1", repo / "baselines", case_ids=["nope"])


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        ({"cases": ["edited"]}, RunKind.RUN),
        ({"tier": "contract"}, RunKind.RUN),
        ({"shard": [1, 4]}, RunKind.RUN),
        ({"case": "edited"}, RunKind.RERUN),
    ],
)
def test_saving_a_partial_run_keeps_the_cases_it_did_not_run(
    repo: Path, args: dict[str, object], kind: RunKind
) -> None:
    # `redline run --case edited` (or --tier, a shard, a rerun) then `baseline save RUN`:
    # the accepted entries of every other case must survive.
    assert main(["baseline", "save", "base1"]) == 0
    with open_store(repo) as store:
        spec = RunSpec("part", [CaseSpec("edited", [OK] * 5, case_hash="hash-2")], kind=kind)
        spec.args = args
        write_run(store, spec)
    assert main(["baseline", "save", "part"]) == 0
    baseline = load_baseline(repo / "baselines", "suite-a")
    assert baseline is not None
    assert baseline.cases["edited"].run_id == "part"
    assert {"stays", "breaks", "drops", "retired", "fixed"} <= set(baseline.cases)
    assert baseline.cases["stays"].run_id == "base1"


def test_comparing_a_partial_run_reports_no_removed_case(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    with open_store(repo) as store:
        spec = RunSpec("only-breaks", [CaseSpec("breaks", [WRONG] * 5, scores=[0.1] * 5)])
        spec.args = {"cases": ["breaks"]}
        write_run(store, spec)
        result = compare_run_with_baselines(store, "only-breaks", repo / "baselines")
    assert {c.case_id: c.status for c in result.cases} == {"breaks": CaseStatus.REGRESSION}


def test_saving_a_full_run_replaces_the_file(repo: Path) -> None:
    assert main(["baseline", "save", "base1"]) == 0
    assert main(["baseline", "save", "next1"]) == 0
    baseline = load_baseline(repo / "baselines", "suite-a")
    assert baseline is not None
    assert "retired" not in baseline.cases and "brand-new" in baseline.cases


def test_unfinished_run_cannot_become_a_baseline(repo: Path) -> None:
    with open_store(repo) as store:
        write_run(store, RunSpec("half", [CaseSpec("x", [OK])], status=RunStatus.INTERRUPTED))
        with pytest.raises(UsageError, match="interrupted"):
            save_baselines(store, "half", repo / "baselines")


def test_golden_diff(repo: Path) -> None:
    diff = golden_diff("line one\nline two\n", "line one\nline 2\n")
    assert diff.splitlines() == [
        "--- golden",
        "+++ output",
        "@@ -1,3 +1,3 @@",
        " line one",
        "-line two",
        "+line 2",
        " ",
    ]
    assert golden_diff("same", "same") == ""
    assert golden_diff("a\n", "a\r\n") != ""
    assert main(["baseline", "save", "base1"]) == 0
    with open_store(repo) as store:
        sample = store.samples("next1", "breaks")[1]
    diff_text, reference = sample_golden_diff(repo / "baselines", sample)
    assert diff_text is not None
    assert reference.source.startswith("the accepted baseline's golden output (run base1")
    assert "-breaks answer 0" in diff_text and "+breaks answer 1" in diff_text
    assert "sample 1 [wrong]" in diff_text


def test_broken_baseline_file_is_a_clear_error(repo: Path) -> None:
    (repo / "baselines").mkdir()
    (repo / "baselines" / "suite-a.json").write_text("{not json", encoding="utf-8")
    assert main(["baseline", "compare", "next1"]) == 2


def test_a_case_whose_pass_rate_rose_is_improved_even_with_longer_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """0/3 → 1/3 with max-words 82 → 104 under a cap of 150: better, not a regression."""
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    words = {"score_type": "max-words"}
    with open_store(tmp_path) as store:
        write_run(
            store,
            RunSpec(
                "old",
                [
                    CaseSpec("0106", [WRONG] * 3, scores=[82.0] * 3, **words),  # type: ignore[arg-type]
                    CaseSpec("judged", [OK] * 3, scores=[4.0] * 3, score_type="judge"),
                    CaseSpec("rising-judged", [WRONG] * 3, scores=[4.0] * 3, score_type="judge"),
                    CaseSpec("broke", [OK] * 3, scores=[4.0] * 3, score_type="judge"),
                ],
            ),
        )
        write_run(
            store,
            RunSpec(
                "new",
                [
                    CaseSpec("0106", [OK, WRONG, WRONG], scores=[104.0] * 3, **words),  # type: ignore[arg-type]
                    CaseSpec("judged", [OK] * 3, scores=[3.0] * 3, score_type="judge"),
                    CaseSpec("rising-judged", [OK] * 3, scores=[3.0] * 3, score_type="judge"),
                    # A regression with a score drop too: one case, counted once.
                    CaseSpec("broke", [WRONG] * 3, scores=[2.0] * 3, score_type="judge"),
                ],
                started_at="2026-01-02T00:00:00.000+00:00",
            ),
        )
    assert main(["baseline", "save", "old"]) == 0
    capsys.readouterr()
    assert main(["baseline", "compare", "new", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    status = {c["case_id"]: c["status"] for c in data["cases"]}
    assert status == {
        "0106": "improved",
        "judged": "score drop",
        "rising-judged": "improved",
        "broke": "regression",
    }
    assert data["counts"] == {"improved": 2, "regression": 1, "score drop": 1}
    assert data["regressions"] == 2
    assert main(["baseline", "compare", "new"]) == 1
    out = capsys.readouterr().out
    assert "4 case(s): 2 improved, 1 regression, 1 score drop" in out
    assert "2 case(s) fail the baseline (1 regression + 1 score drop)" in out
