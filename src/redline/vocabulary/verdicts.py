"""Per-sample verdicts and per-assertion results (docs/rules.md: A verdict per sample)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from redline.vocabulary.completion import FinishReason


class Verdict(StrEnum):
    OK = "ok"
    WRONG = "wrong"
    MALFORMED = "malformed"
    REFUSED = "refused"
    TRUNCATED = "truncated"
    TRANSPORT = "transport"


#: Verdicts that say something about the content the model produced.
CONTENT_VERDICTS: frozenset[Verdict] = frozenset(
    {Verdict.OK, Verdict.WRONG, Verdict.MALFORMED, Verdict.REFUSED}
)
#: Verdicts caused by the infrastructure or the token budget; kept out of quality numbers.
NON_CONTENT_VERDICTS: frozenset[Verdict] = frozenset({Verdict.TRUNCATED, Verdict.TRANSPORT})
#: Display and storage order.
VERDICT_ORDER: tuple[Verdict, ...] = (
    Verdict.OK,
    Verdict.WRONG,
    Verdict.MALFORMED,
    Verdict.REFUSED,
    Verdict.TRUNCATED,
    Verdict.TRANSPORT,
)


class AssertionStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    #: The backend needed to evaluate it is not available; neither pass nor fail.
    UNAVAILABLE = "unavailable"
    #: Not evaluated: an earlier layer failed, or the layer is disabled for this run.
    SKIPPED = "skipped"


@dataclass(frozen=True)
class AssertionResult:
    """The outcome of one assertion on one sample, kept as evidence."""

    index: int
    type: str
    status: AssertionStatus
    reason: str
    score: float | None = None
    threshold: float | None = None
    structural: bool = False

    @property
    def passed(self) -> bool:
        return self.status is AssertionStatus.PASSED

    @property
    def failed(self) -> bool:
        return self.status is AssertionStatus.FAILED


def decide_verdict(
    *,
    finish_reason: FinishReason | None,
    transport_error: str | None,
    results: Sequence[AssertionResult],
    refusal_detected: bool,
    expect_refusal: bool,
    settled: bool = False,
) -> Verdict:
    """The one place a sample's verdict is decided.

    Precedence: transport > truncated > refused > malformed > wrong > ok.
    A refusal when the case expects one is `ok` (its other assertions still count);
    no refusal when one is expected is `wrong`.

    `settled` says a failure was found that no continuation of the output could undo
    (prose before the JSON, a banned phrase already written, a budget already spent, a
    token loop): then a cut-off output is judged on its content, because the cut did not
    hide the answer. Without it, truncation outranks every content verdict.

    A check that could not be answered (its model backend failed or answered malformed)
    makes the sample `transport`: like a failed request it is kept out of the content
    numbers, so a run whose checks nobody could answer is inconclusive, never green.
    """
    if transport_error is not None:
        return Verdict.TRANSPORT
    failed = structural = False
    for r in results:  # one pass: this runs for every sample
        if r.status is AssertionStatus.FAILED:
            failed = True
            structural = structural or r.structural
        elif r.status is AssertionStatus.UNAVAILABLE:
            return Verdict.TRANSPORT
    if finish_reason is FinishReason.LENGTH and not settled:
        return Verdict.TRUNCATED
    if refusal_detected and not expect_refusal:
        return Verdict.REFUSED
    if structural:
        return Verdict.MALFORMED
    if failed:
        return Verdict.WRONG
    if expect_refusal and not refusal_detected:
        return Verdict.WRONG
    return Verdict.OK
