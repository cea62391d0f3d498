"""The run report reads the store's earlier runs: marginal cases and last night's comparison."""

from __future__ import annotations

from pathlib import Path

from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.markdown import markdown_summary
from redline.vocabulary.verdicts import Verdict
from runfactory import OK, WRONG, CaseSpec, RunSpec, ok_cases, open_store, write_run


def _night(day: int, edge: list[Verdict], drop: list[Verdict]) -> RunSpec:
    return RunSpec(
        f"night{day:02d}",
        [*ok_cases(8), CaseSpec("edge", edge), CaseSpec("drop", drop)],
        started_at=f"2026-01-{day:02d}T00:00:00.000+00:00",
    )


def test_report_lists_marginal_cases_and_the_drop_since_the_previous_night(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        for day in (1, 2, 3):
            write_run(store, _night(day, [OK] * 4 + [WRONG], [OK] * 5))
        write_run(store, _night(4, [OK] * 4 + [WRONG], [WRONG] * 5))
        report = build_run_report(store, "night04")
        summary = markdown_summary(report)
        page = html_report(report)
        first = markdown_summary(build_run_report(store, "night01"))
    assert "### Marginal cases (1): raise their samples or retire them" in summary
    assert "| suite-a/edge | 4 | 16/20 (80%) | 80% |" in summary
    assert "### Against the previous run `night03` (2026-01-03 00:00 UTC)" in summary
    assert r"1 case\(s\) dropped significantly, 0 rose significantly" in summary
    assert "- suite-a/drop: 5/5 → 0/5 (p = 0.004)" in summary
    assert "marginal for 4 runs (16/20): raise samples or retire" in page
    assert "Against the previous run <code>night03</code>" in page
    assert "1 case(s) dropped significantly" in page
    assert "Marginal cases" not in first  # one night is no streak
    assert "No earlier scheduled run in the store to compare with." in first
