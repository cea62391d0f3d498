"""Quarantine: a case that keeps sampling and reporting but cannot turn a run red."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from redline.cli import main
from redline.errors import ProblemsError
from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.junit import junit_xml
from redline.report.markdown import markdown_summary
from redline.running.store import RunStore
from redline.suite.cases import load_suite
from servers import LoopbackLLMServer
from test_cli_run import latest_run_id, project  # noqa: F401  (fixture)
from test_runner import write_suite

FUTURE = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
PAST = (datetime.date.today() - datetime.timedelta(days=1)).isoformat()


def _quarantine(folder: Path, case_id: str, until: str) -> None:
    path = folder / f"{case_id}.yaml"
    path.write_text(
        path.read_text(encoding="utf-8")
        + f"quarantine: {{reason: flaps on the new model, ticket: SUP-77, until: {until}}}\n",
        encoding="utf-8",
    )


def test_a_quarantined_failure_is_reported_but_the_run_stays_green(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_suite(root, "s", {"good": "MODE:json", "bad": "MODE:preamble"})
    _quarantine(folder, "bad", FUTURE)
    assert main(["run", "s", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "quarantined (reported, not counted in the result):" in out
    assert "s/bad: 0/2 fail · quarantined until" in out and "SUP-77" in out
    with RunStore.open(root / ".redline" / "redline.db") as store:
        report = build_run_report(store, latest_run_id(root))
    assert [q.case.case_id for q in report.quarantined] == ["bad"]
    assert 'skipped message="0/2 fail' in junit_xml(report)
    assert "<h2>Quarantined (reported, not counted)</h2>" in html_report(report)
    summary = markdown_summary(report)
    assert "Quarantined (reported, not counted):" in summary
    assert "| s/bad" not in summary  # not in the table of problems


def test_a_quarantined_case_is_counted_apart_never_as_a_failure(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary, Markdown and HTML count a held case as quarantined, not as a fail, and
    the HTML table's badge says so (JUnit already calls it skipped)."""
    folder = write_suite(root, "s", {"good": "MODE:json", "bad": "MODE:preamble"})
    _quarantine(folder, "bad", FUTURE)
    assert main(["run", "s", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "2 case(s): 1 pass, 0 fail, 0 inconclusive, 1 quarantined" in out
    with RunStore.open(root / ".redline" / "redline.db") as store:
        report = build_run_report(store, latest_run_id(root))
    counts = "1 pass, 0 fail, 0 inconclusive, 0 marginal, 1 quarantined"
    assert f"Cases: {counts}." in markdown_summary(report)
    page = html_report(report)
    assert f"cases: {counts})" in page
    assert '<span class="badge r-fail">' not in page
    assert page.count('<span class="badge r-quarantined">quarantined</span>') == 2  # row, detail


def test_a_quarantine_past_its_date_counts_again_and_a_passing_one_asks_for_release(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_suite(root, "s", {"good": "MODE:json", "bad": "MODE:preamble"})
    _quarantine(folder, "bad", PAST)
    _quarantine(folder, "good", FUTURE)
    assert main(["run", "s", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "s/good: 2/2 passing again — release?" in out
    assert "s/bad" not in out.split("quarantined (reported")[1]


def test_a_quarantine_needs_a_reason_and_an_end_date(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, "s", {"a": "MODE:json", "b": "MODE:json"})
    (folder / "a.yaml").write_text(
        (folder / "a.yaml").read_text(encoding="utf-8") + "quarantine: {until: 2026-12-01}\n",
        encoding="utf-8",
    )
    (folder / "b.yaml").write_text(
        (folder / "b.yaml").read_text(encoding="utf-8")
        + "quarantine: {reason: flaky, until: next week}\n",
        encoding="utf-8",
    )
    with pytest.raises(ProblemsError) as caught:
        load_suite(folder)
    messages = " | ".join(p.message for p in caught.value.problems)
    assert "needs a `reason`" in messages and "`until:` as a date" in messages


@pytest.fixture
def root(project: Path, llm_server: LoopbackLLMServer) -> Path:  # noqa: F811
    return project
