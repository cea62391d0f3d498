"""`redline compare`: per-case deltas with Fisher p-values, rule-8 withholding, case changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.cli import main
from redline.deciding.compare import compare_runs
from redline.report import build_run_report
from redline.report.markdown import markdown_summary
from redline.vocabulary.records import RunKind
from redline.vocabulary.verdicts import Verdict
from runfactory import (
    OK,
    TRANSPORT,
    TRUNCATED,
    WRONG,
    CaseSpec,
    RunSpec,
    ok_cases,
    open_store,
    write_config,
    write_run,
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


def _write(repo: Path, *runs: RunSpec) -> None:
    with open_store(repo) as store:
        for run in runs:
            write_run(store, run)


def _b(run_id: str, cases: list[CaseSpec], **kw: object) -> RunSpec:
    spec = RunSpec(run_id, cases, started_at="2026-03-02T00:00:00.000+00:00")
    for key, value in kw.items():
        setattr(spec, key, value)
    return spec


def test_deltas_sorted_by_largest_drop_with_fisher_p(repo: Path) -> None:
    a = RunSpec("A", [*ok_cases(8, samples=20), CaseSpec("x-mild", [OK] * 20)])
    b_cases = ok_cases(8, samples=20)
    b_cases[0] = CaseSpec("c00", [OK] * 15 + [WRONG] * 5)  # 20/20 → 15/20, p = 0.0236
    b_cases[1] = CaseSpec("c01", [OK] * 18 + [WRONG] * 2)  # 20/20 → 18/20, not significant
    b_cases.append(CaseSpec("x-mild", [OK] * 18 + [TRUNCATED] * 2))  # rate stays 100%
    _write(repo, a, _b("B", b_cases, model_id="local:model-b", manifest={"p.md": "new"}))
    with open_store(repo) as store:
        c = compare_runs(store, "A", "B")
    assert not c.withheld
    assert [d.case_id for d in c.deltas[:2]] == ["c00", "c01"]
    first = c.deltas[0]
    assert first.delta == pytest.approx(-0.25)
    assert first.p_value == pytest.approx(0.023562023562023564, rel=1e-12)
    assert first.significant_drop
    assert not c.deltas[1].significant_drop
    mild = next(d for d in c.deltas if d.case_id == "x-mild")
    assert mild.delta == 0 and mild.verdict_delta[Verdict.TRUNCATED] == 2
    assert mild.verdict_delta[Verdict.OK] == -2
    assert [d.case_id for d in c.significant_drops] == ["c00"]
    kinds = {m.path: m.kind for m in c.manifest_changes}
    assert kinds == {"p.md": "added", "suite-a/suite.yaml": "removed"}


def test_cli_exit_1_on_significant_drop_and_0_otherwise(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b_cases = ok_cases(8, samples=20)
    b_cases[0] = CaseSpec("c00", [OK] * 10 + [WRONG] * 10)
    _write(repo, RunSpec("A", ok_cases(8, samples=20)), _b("B", b_cases, model_id="local:m2"))
    assert main(["compare", "A", "B"]) == 1
    out = capsys.readouterr().out
    assert "model: local:model-a → local:m2" in out
    assert "c00" in out and "0.0002" in out and "-50%" in out
    assert "dropped beyond sampling noise" in out
    assert main(["compare", "B", "A"]) == 0  # an improvement is never a failure


def test_case_changed_is_listed_apart(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b_cases = ok_cases(8, samples=20)
    b_cases[3] = CaseSpec("c03", [WRONG] * 20, case_hash="hash-2")
    _write(repo, RunSpec("A", ok_cases(8, samples=20)), _b("B", b_cases))
    with open_store(repo) as store:
        c = compare_runs(store, "A", "B")
    assert [a.case_id for a, _ in c.changed] == ["c03"]
    assert "c03" not in [d.case_id for d in c.deltas]
    assert main(["compare", "A", "B"]) == 0
    assert "case changed" in capsys.readouterr().out


@pytest.mark.parametrize(("cases", "code"), [(7, 3), (8, 0)])
def test_rule8_needs_eight_cases(
    repo: Path, capsys: pytest.CaptureFixture[str], cases: int, code: int
) -> None:
    _write(repo, RunSpec("A", ok_cases(8)), _b("B", ok_cases(cases)))
    assert main(["compare", "A", "B"]) == code
    out = capsys.readouterr().out
    if code == 3:
        assert "withheld" in out
        assert "run B: only 7 case(s) evaluated: with fewer than 8, a content comparison" in out
    else:
        assert "withheld" not in out


@pytest.mark.parametrize(("lost", "code"), [(20, 0), (21, 3)])
def test_rule8_non_content_share(
    repo: Path, capsys: pytest.CaptureFixture[str], lost: int, code: int
) -> None:
    # 10 cases × 10 samples = 100 samples; `lost` of them transport/truncated.
    b_cases = []
    for i in range(10):
        n = min(10, max(0, lost - i * 10))
        bad = [TRANSPORT if j % 2 else TRUNCATED for j in range(n)]
        b_cases.append(CaseSpec(f"c{i:02d}", bad + [OK] * (10 - n)))
    _write(repo, RunSpec("A", ok_cases(10, samples=10)), _b("B", b_cases))
    with open_store(repo) as store:
        c = compare_runs(store, "A", "B")
    assert bool(c.withheld) is (code == 3)
    assert main(["compare", "A", "B"]) == code
    out = capsys.readouterr().out
    if code == 3:
        assert (
            "21% of samples are truncated or transport failures (limit 20%), so the content" in out
        )
        assert c.deltas == ()
        assert "transport" in out  # verdict counts are still shown


def test_usage_keeps_transport_out_and_never_guesses_an_unknown_cost() -> None:
    from redline.config import Price
    from redline.running.usage import percentile, usage_of
    from redline.vocabulary.records import SampleUsage

    samples = [
        SampleUsage(OK, 100.0, 1000, 200, None),
        SampleUsage(Verdict.WRONG, 300.0, 1000, 400, None),
        SampleUsage(TRANSPORT, 30000.0, None, None, None),
    ]
    priced = usage_of(samples, Price(2.0, 8.0))
    assert (priced.samples, priced.answered) == (3, 2)
    assert priced.mean_latency_ms == 200.0 and priced.p95_latency_ms == 300.0
    assert priced.cost == pytest.approx((2000 * 2.0 + 600 * 8.0) / 1e6)
    assert priced.cost_per_1k == pytest.approx(priced.cost / 2 * 1000)
    assert usage_of(samples, None).cost is None, "no price and no recorded cost: unknown"
    recorded = [SampleUsage(OK, 5.0, 10, 10, 0.0)]
    assert usage_of(recorded, None).cost == 0.0, "the local model records its cost as 0"
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 95) == 5.0
    assert percentile([], 95) is None


def test_sorting_by_a_column_puts_rows_without_a_value_last(tmp_path: Path) -> None:
    from redline.report.comparison import sort_rows

    a = RunSpec("A", [CaseSpec("x", [OK] * 4), CaseSpec("y", [TRUNCATED] * 4), *ok_cases(8)])
    b = RunSpec(
        "B",
        [CaseSpec("x", [OK, OK, WRONG, WRONG]), CaseSpec("y", [OK] * 4), *ok_cases(8)],
        started_at="2026-01-02T00:00:00.000+00:00",
    )
    with open_store(tmp_path) as store:
        write_run(store, a)
        write_run(store, b)
        c = compare_runs(store, "A", "B")
    rows = sort_rows(list(c.rows), "delta")
    assert rows[0].case_id == "x" and rows[-1].case_id == "y"
    rows = sort_rows(list(c.rows), "delta", descending=True)
    assert rows[0].delta == 0 and rows[-1].case_id == "y"
    assert [d.case_id for d in sort_rows(list(c.rows), "case")][:2] == ["c00", "c01"]


def test_a_rerun_is_compared_with_its_parent_only_on_the_cases_it_ran(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent_manifest = {f"suite-a/c{i:02d}.yaml": f"h{i}" for i in range(30)}
    parent_manifest |= {"other/suite.yaml": "o1", "suite-a/suite.yaml": "s1"}
    rerun_manifest = {"suite-a/suite.yaml": "s1", "suite-a/c03.yaml": "h3", "@prompt": "p2"}
    _write(
        repo,
        RunSpec("parent", ok_cases(30), manifest=parent_manifest),
        RunSpec(
            "rerun1",
            [CaseSpec("c03", [OK] * 20)],
            kind=RunKind.RERUN,
            parent_id="parent",
            manifest=rerun_manifest,
            args={"case": "c03", "samples": 20},
            started_at="2026-01-02T00:00:00.000+00:00",
        ),
    )
    with open_store(repo) as store:
        result = compare_runs(store, "parent", "rerun1")
    assert result.narrowed_to == "rerun1"
    assert result.only_a == () and result.only_b == ()
    assert result.a.verdicts[Verdict.OK] == 5  # only c03's samples of the parent
    assert [(m.path, m.kind) for m in result.manifest_changes] == [("@prompt", "added")]
    assert main(["compare", "parent", "rerun1"]) == 3  # one case: too little evidence
    out = capsys.readouterr().out
    assert "removed" not in out and "only in A" not in out
    assert "covering only the cases run rerun1 ran" in out


def test_runs_that_share_no_suites_say_so_not_that_too_few_cases_were_evaluated(
    tmp_path: Path,
) -> None:
    write_config(tmp_path)
    cases = [CaseSpec(f"c{i}", [OK] * 3) for i in range(10)]
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("night1", cases, started_at="2026-01-01T03:00:00.000+00:00"))
        other = [CaseSpec(f"c{i}", [OK] * 3, suite="suite-b") for i in range(10)]
        write_run(store, RunSpec("night2", other, started_at="2026-01-02T03:00:00.000+00:00"))
        comparison = compare_runs(store, "night1", "night2")
        report = build_run_report(store, "night2")
    assert comparison.withheld == [
        "runs night1 and night2 share no suites (suite-a against suite-b): nothing to compare"
    ]
    summary = markdown_summary(report)
    assert "share no suites" in summary and "case(s) evaluated" not in summary
