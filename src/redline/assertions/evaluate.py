"""One sample through a case's assertions, to a verdict (docs/rules.md: Layer 1 before
Layer 2, fail fast; A verdict per sample)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from redline.assertions.base import COST_HEURISTIC, LAYER_1, Assertion, Check, Sample
from redline.assertions.refusal import sample_refusal
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.messages import LoopEnd, loop_end
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict, decide_verdict


class Checked(Protocol):
    """What a sample's evaluation needs of its case (a loaded `Case` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def vars(self) -> Mapping[str, str]: ...
    @property
    def expect_refusal(self) -> bool: ...
    @property
    def assertions(self) -> Sequence[Assertion]: ...


@dataclass(frozen=True)
class SampleEvaluation:
    verdict: Verdict
    results: tuple[AssertionResult, ...]
    refusal_detected: bool
    #: A failure no continuation could undo was found: a cut-off output is judged on content.
    settled: bool = False
    #: Indices of failures of a cut-off, settled output that the cut itself may have caused
    #: (a JSON prefix, a `contains` still to come): they do not decide its verdict.
    undecided: frozenset[int] = frozenset()


def evaluation_order(assertions: Iterable[Assertion]) -> list[Assertion]:
    """Cheap → expensive: by layer, then cost, then position in the case file."""
    return sorted(assertions, key=lambda a: (a.layer, a.cost, a.index))


#: id of a case's assertions → (those assertions, their evaluation order).
_ORDERS: dict[int, tuple[tuple[Assertion, ...], tuple[Assertion, ...]]] = {}


def _case_order(assertions: Sequence[Assertion]) -> tuple[Assertion, ...]:
    """A loaded case's evaluation order, sorted once rather than for every sample."""
    if not isinstance(assertions, tuple):  # a list could change between two samples
        return tuple(evaluation_order(assertions))
    known = _ORDERS.get(id(assertions))
    if known is not None and known[0] is assertions:
        return known[1]
    if len(_ORDERS) >= 4096:
        _ORDERS.clear()
    ordered = tuple(evaluation_order(assertions))
    _ORDERS[id(assertions)] = (assertions, ordered)
    return ordered


def evaluate_sample(case: Checked, completion: Completion) -> SampleEvaluation:
    """Run `case`'s assertions on one completion and decide its verdict.

    A transport failure has no output to judge. Otherwise every Layer 1
    assertion runs and is kept; a later layer (models, judge) runs only when
    every earlier layer passed and the sample is neither truncated nor an
    unexpected refusal, so no costly call is spent on a sample already lost.
    """
    if completion.error is not None:
        verdict = decide_verdict(
            finish_reason=completion.finish_reason,
            transport_error=completion.error,
            results=(),
            refusal_detected=False,
            expect_refusal=case.expect_refusal,
        )
        return SampleEvaluation(verdict, (), False)

    sample = Sample(completion, case.vars, case.id, case.assertions)
    refusal = sample_refusal(sample)
    unexpected_refusal = refusal if not case.expect_refusal else None
    results: list[AssertionResult] = []
    blocked: str | None = None
    settled = False
    final: set[int] = set()
    current_layer = 1
    for assertion in _case_order(case.assertions):
        if assertion.layer != current_layer:
            current_layer = assertion.layer
            if current_layer > 1 and blocked is None:
                blocked = _blocker(results, completion, unexpected_refusal)
        if blocked is not None and assertion.layer > 1:
            check = Check(AssertionStatus.SKIPPED, f"not run: {blocked}")
        else:
            check = _run(assertion, sample)
            if _settles(assertion, check):
                settled = True
                final.add(assertion.index)
        results.append(_result(assertion, check))

    results.sort(key=lambda r: r.index)
    if completion.tool_calls or completion.steps:
        results.extend(_call_checks(sample, len(case.assertions)))
    undecided: frozenset[int] = frozenset()
    if settled and completion.finish_reason is FinishReason.LENGTH:
        undecided = frozenset(r.index for r in results if r.failed and r.index not in final)
    verdict = decide_verdict(
        finish_reason=completion.finish_reason,
        transport_error=None,
        results=[r for r in results if r.index not in undecided] if undecided else results,
        refusal_detected=refusal is not None,
        expect_refusal=case.expect_refusal,
        settled=settled,
    )
    return SampleEvaluation(verdict, tuple(results), refusal is not None, settled, undecided)


#: The checks every sample with function calls gets, whatever its case asks.
MALFORMED_ARGUMENTS = "tool-call-arguments"
LOOP_LIMIT = "max-steps"


def _call_checks(sample: Sample, after: int) -> list[AssertionResult]:
    """Failures of the calls themselves, numbered after the case's assertions: arguments
    that are not a JSON object (`malformed`), a tool loop still calling at its last step."""
    found = []
    for position, call in enumerate(sample.tool_calls, start=1):
        _, error = sample.arguments(position)
        if error is not None:
            reason = f"call {position} ({call.name}, id {call.id or 'none'}): {error}"
            found.append(
                AssertionResult(
                    after, MALFORMED_ARGUMENTS, AssertionStatus.FAILED, reason, structural=True
                )
            )
            break
    steps = sample.completion.steps
    if loop_end(steps) is LoopEnd.MAX_STEPS:
        reason = (
            f"still calling tools after {len(steps)} requests (max_steps): no final answer; "
            f"last calls: {', '.join(c.name for c in steps[-1].tool_calls)}"
        )
        found.append(
            AssertionResult(after + len(found), LOOP_LIMIT, AssertionStatus.FAILED, reason)
        )
    return found


def settled_failure(case: Checked) -> Callable[[Completion], str | None] | None:
    """What tells, while a sample is still being generated, that its verdict is settled.

    The returned function takes the output so far (a cut-off completion) and answers the
    failure no continuation could undo — prose before the JSON, a banned phrase already
    written, a budget already spent, a token loop — as `check: reason`, or None while
    the output could still pass. It runs only the case's Layer 1 checks that can settle
    a verdict and are cheap enough to repeat every few tokens: those marked final, and
    the parse and heuristic ones whose failure may be final; never a model or a judge.
    Such a failure also settles the finished output's verdict (`evaluate_sample` on a
    cut-off output), so stopping there changes no verdict. None when no check of the
    case can settle one.
    """
    checks = [
        a
        for a in evaluation_order(case.assertions)
        if a.layer == LAYER_1 and (a.final or a.cost <= COST_HEURISTIC)
    ]
    if not checks:
        return None

    def failure(partial: Completion) -> str | None:
        sample = Sample(partial, case.vars, case.id, case.assertions)
        for assertion in checks:
            check = _run(assertion, sample)
            if _settles(assertion, check):
                return f"{assertion.describe()}: {check.reason}"
        return None

    return failure


def _settles(assertion: Assertion, check: Check) -> bool:
    """A failure no continuation of the output could undo."""
    return check.status is AssertionStatus.FAILED and (check.final or assertion.final)


def _blocker(
    results: list[AssertionResult], completion: Completion, unexpected_refusal: str | None
) -> str | None:
    """Why later layers must not run on this sample, or None when they may."""
    failed = [r for r in results if r.failed]
    if failed:
        names = ", ".join(dict.fromkeys(r.type for r in failed))
        return f"an earlier layer failed ({names})"
    if completion.finish_reason is FinishReason.LENGTH:
        return "output truncated (finish reason length)"
    if unexpected_refusal is not None:
        return f"unexpected refusal ({unexpected_refusal})"
    return None


def _run(assertion: Assertion, sample: Sample) -> Check:
    try:
        return assertion.check(sample)
    except Exception as exc:
        return Check.unavailable(
            f"{assertion.type_name} could not be evaluated: {type(exc).__name__}: {exc}"
        )


def _result(assertion: Assertion, check: Check) -> AssertionResult:
    return AssertionResult(
        index=assertion.index,
        type=assertion.type_name,
        status=check.status,
        reason=check.reason,
        score=check.score,
        threshold=check.threshold if check.threshold is not None else assertion.threshold,
        structural=assertion.structural,
    )
