"""The app's sample pane says when redline stopped generating a sample, and why."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import settle
from textual.widgets import DataTable, Static
from triage_repo import TriageRepo
from triage_store import SUITE, _run_record

from redline.vocabulary.completion import FinishReason
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunResult, RunStatus, SampleRecord
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict
from redline_tui.app import TriageApp
from redline_tui.screens.outputs import OutputsScreen

pytestmark = pytest.mark.anyio

RUN = "5709ed000001"
SETTLED = "is-json: not JSON (Expecting value at line 1 column 1); output starts 'Sure! Here'"


def _sample(index: int, *, stopped: bool) -> SampleRecord:
    failed = AssertionResult(0, "is-json", AssertionStatus.FAILED, SETTLED.split(": ", 1)[1])
    passed = AssertionResult(0, "is-json", AssertionStatus.PASSED, "valid JSON")
    return SampleRecord(
        run_id=RUN,
        suite=SUITE,
        case_id="0042-amount-suffix",
        index=index,
        output="Sure! Here" if stopped else '{"total": 12000}',
        verdict=Verdict.MALFORMED if stopped else Verdict.OK,
        finish_reason=FinishReason.LENGTH if stopped else FinishReason.STOP,
        output_tokens=4 if stopped else 9,
        stopped_early=SETTLED if stopped else None,
        assertions=(failed if stopped else passed,),
    )


async def test_a_stopped_sample_shows_stopped_and_the_check_that_settled_it(
    triage_repo: TriageRepo,
) -> None:
    record = replace(
        _run_record(RUN, 28), status=RunStatus.FINISHED, result=RunResult.RED, git_dirty=False
    )
    case = CaseRecord(
        run_id=RUN,
        suite=SUITE,
        case_id="0042-amount-suffix",
        tier="quality",
        model_id=record.model_id,
        samples=2,
        required=2,
        passes=1,
        result=CaseOutcome.FAIL,
        verdicts={Verdict.OK: 1, Verdict.MALFORMED: 1},
        case_hash="h-stable",
    )
    samples = [_sample(0, stopped=True), _sample(1, stopped=False)]
    triage_repo.ctx.store.add_run(record, [case], samples)

    app = TriageApp(triage_repo.ctx, RUN)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        table = screen.query_one("#samples", DataTable)
        assert [str(table.get_row_at(i)[3]) for i in range(2)] == ["stopped", "stop"]
        reasons = str(screen.query_one("#sample-reasons", Static).render())
        assert "stopped early: redline ended the generation after 4 tokens" in reasons
        assert SETTLED in reasons
        await pilot.press("j")
        reasons = str(screen.query_one("#sample-reasons", Static).render())
        assert "stopped early" not in reasons
