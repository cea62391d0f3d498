"""Step 2 shows a tool-calling sample as a transcript: each call with its arguments, each
step of a loop with the fixture answers sent back, and the conversation the case sends."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import settle
from textual.widgets import Static
from triage_repo import TriageRepo
from triage_store import SUITE, _run_record

from redline.vocabulary.completion import FinishReason
from redline.vocabulary.messages import Step, ToolCall, ToolResult
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunResult, RunStatus, SampleRecord
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict
from redline_tui.app import TriageApp
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.widgets.lazy_text import LazyText

pytestmark = pytest.mark.anyio

RUN = "70015e000001"
CASE = "0042-amount-suffix"
LOOKUP = ToolCall("call_1", "lookup_order", '{"order": "A-17", "note": "\\u001b[31mred"}')
REFUND = ToolCall("call_2", "issue_refund", '{"order": "A-17", "amount": 12')


def _loop_sample() -> SampleRecord:
    steps = (
        Step(
            "",
            FinishReason.TOOL_CALLS,
            (LOOKUP,),
            (ToolResult("call_1", "lookup_order", "shipped \x1b[2J"),),
        ),
        Step("Refunding now.", FinishReason.TOOL_CALLS, (REFUND,)),
    )
    failed = AssertionResult(0, "tool-args-valid", AssertionStatus.FAILED, "arguments are not JSON")
    return SampleRecord(
        run_id=RUN,
        suite=SUITE,
        case_id=CASE,
        index=0,
        output="Refunding now.",
        verdict=Verdict.MALFORMED,
        finish_reason=FinishReason.TOOL_CALLS,
        tool_calls=(REFUND,),
        steps=steps,
        assertions=(failed,),
    )


async def test_a_tool_loop_reads_as_steps_calls_and_results_escaped(
    triage_repo: TriageRepo,
) -> None:
    record = replace(
        _run_record(RUN, 28), status=RunStatus.FINISHED, result=RunResult.RED, git_dirty=False
    )
    case = CaseRecord(
        run_id=RUN,
        suite=SUITE,
        case_id=CASE,
        tier="quality",
        model_id=record.model_id,
        samples=1,
        required=1,
        passes=0,
        result=CaseOutcome.FAIL,
        verdicts={Verdict.MALFORMED: 1},
        case_hash="h-stable",
    )
    triage_repo.ctx.store.add_run(record, [case], [_loop_sample()])

    app = TriageApp(triage_repo.ctx, RUN)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        reasons = str(screen.query_one("#sample-reasons", Static).render())
        assert "tool calls: lookup_order, issue_refund" in reasons
        raw = screen.query_one("#raw-output", LazyText)
        text = "\n".join(raw.lines)
        assert "── assistant, step 1 of 2 (finish tool_calls) ──" in text
        assert "tool call lookup_order (id call_1)" in text
        assert '  "order": "A-17",' in text  # arguments pretty-printed
        assert "── tool result lookup_order (answers call_1) ──\nshipped \\x1b[2J" in text
        assert '{"order": "A-17", "amount": 12' in text  # not JSON: shown as received
        assert "arguments are not JSON" in text
        assert "ended after 2 request(s)" in text
        assert "\x1b" not in text  # escaped, never interpreted
        assert "c: the conversation sent" in str(raw.border_title)

        await pilot.press("c")
        await settle(pilot)
        sent = "\n".join(raw.lines)
        assert sent.startswith("── system ──")
        assert "── user ──" in sent
        assert "conversation sent" in str(raw.border_title)
        await pilot.press("c")
        await settle(pilot)
        assert "\n".join(raw.lines) == text
