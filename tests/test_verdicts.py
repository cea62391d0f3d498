from __future__ import annotations

import pytest

from redline.vocabulary.completion import FinishReason
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict, decide_verdict

FAILED_SHAPE = AssertionResult(0, "is-json", AssertionStatus.FAILED, "not JSON", structural=True)
FAILED_CONTENT = AssertionResult(1, "contains", AssertionStatus.FAILED, "missing")
PASSED = AssertionResult(2, "max-words", AssertionStatus.PASSED, "12 words")
UNAVAILABLE = AssertionResult(3, "mentions", AssertionStatus.UNAVAILABLE, "no model")


@pytest.mark.parametrize(
    ("finish", "error", "results", "refusal", "expect", "verdict"),
    [
        # transport beats everything
        (FinishReason.LENGTH, "timeout", [FAILED_SHAPE], True, False, Verdict.TRANSPORT),
        # truncated beats refused, malformed and wrong
        (FinishReason.LENGTH, None, [FAILED_SHAPE, FAILED_CONTENT], True, False, Verdict.TRUNCATED),
        # refused beats malformed
        (FinishReason.STOP, None, [FAILED_SHAPE], True, False, Verdict.REFUSED),
        (FinishReason.REFUSAL, None, [], True, False, Verdict.REFUSED),
        # malformed beats wrong
        (FinishReason.STOP, None, [FAILED_CONTENT, FAILED_SHAPE], False, False, Verdict.MALFORMED),
        (FinishReason.STOP, None, [FAILED_CONTENT, PASSED], False, False, Verdict.WRONG),
        (FinishReason.STOP, None, [PASSED], False, False, Verdict.OK),
        # a check nobody could answer is infrastructure noise, never a silent pass
        (FinishReason.STOP, None, [PASSED, UNAVAILABLE], False, False, Verdict.TRANSPORT),
        (FinishReason.STOP, None, [FAILED_CONTENT, UNAVAILABLE], False, False, Verdict.TRANSPORT),
        # an expected refusal is ok; its other assertions still count
        (FinishReason.STOP, None, [PASSED], True, True, Verdict.OK),
        (FinishReason.STOP, None, [FAILED_CONTENT], True, True, Verdict.WRONG),
        # no refusal when one is expected is wrong
        (FinishReason.STOP, None, [PASSED], False, True, Verdict.WRONG),
    ],
)
def test_verdict_precedence(
    finish: FinishReason,
    error: str | None,
    results: list[AssertionResult],
    refusal: bool,
    expect: bool,
    verdict: Verdict,
) -> None:
    assert (
        decide_verdict(
            finish_reason=finish,
            transport_error=error,
            results=results,
            refusal_detected=refusal,
            expect_refusal=expect,
        )
        is verdict
    )


def test_a_settled_failure_lets_a_cut_off_output_be_judged_on_content() -> None:
    def verdict(settled: bool, results: list[AssertionResult]) -> Verdict:
        return decide_verdict(
            finish_reason=FinishReason.LENGTH,
            transport_error=None,
            results=results,
            refusal_detected=False,
            expect_refusal=False,
            settled=settled,
        )

    assert verdict(False, [FAILED_SHAPE]) is Verdict.TRUNCATED
    assert verdict(True, [FAILED_SHAPE]) is Verdict.MALFORMED
    assert verdict(True, [FAILED_CONTENT, PASSED]) is Verdict.WRONG
    # transport still beats everything, settled or not
    assert (
        decide_verdict(
            finish_reason=FinishReason.LENGTH,
            transport_error="reset",
            results=[FAILED_SHAPE],
            refusal_detected=False,
            expect_refusal=False,
            settled=True,
        )
        is Verdict.TRANSPORT
    )
