"""A red night read by cause: failing cases grouped by how they fail, each marked by its past.

Forty failing cases rarely have forty causes. Grouping by the first assertion that failed
(and the verdict most of the case's bad samples got) turns a long red list into a handful of
reasons to look at; the trend says which of them started tonight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise

from redline.deciding.history import HistoryPoint
from redline.vocabulary.records import CaseOutcome, CaseRecord, SampleRecord
from redline.vocabulary.verdicts import Verdict

#: (suite, case id, assertion index) → the assertion as the case file says it, or None when
#: the case file is not at hand (then the type and index stand for it).
Describe = Callable[[str, str, int], str | None]

#: Runs looked at to call a case flapping.
FLAP_WINDOW = 6
#: Changes between pass and fail within the window that make a case flapping.
FLAP_CHANGES = 2


@dataclass(frozen=True, order=True)
class FailureSignature:
    """How a case fails: the first assertion its bad samples failed, and their usual verdict."""

    assertion: str
    verdict: Verdict

    @property
    def label(self) -> str:
        return f"{self.assertion} ({self.verdict})" if self.assertion else str(self.verdict)


@dataclass(frozen=True)
class FailureGroup:
    signature: FailureSignature
    cases: tuple[CaseRecord, ...]


class Trend(StrEnum):
    NEW = "new"
    STILL_FAILING = "still failing"
    FLAPPING = "flapping"


@dataclass(frozen=True)
class CaseTrend:
    trend: Trend
    #: For `still failing`: how many runs in a row, this one included.
    runs: int = 1
    #: Where the model changed inside the runs the mark rests on: `old → new`, "" if not
    #: (the label says how many runs ago; the History step shows the ids).
    model_change: str = ""
    #: How many runs ago it changed (0: at this run).
    model_changed_ago: int = 0

    @property
    def label(self) -> str:
        where = ""
        if self.model_change:
            ago = self.model_changed_ago
            when = "at this run" if ago == 0 else f"{ago} run{'s' if ago != 1 else ''} ago"
            where = f"model changed {when}"
        if self.trend is Trend.STILL_FAILING:
            return f"still failing ({self.runs} runs{'; ' + where if where else ''})"
        return f"{self.trend} ({where})" if where else str(self.trend)


def failure_signature(
    case: CaseRecord, samples: Sequence[SampleRecord], describe: Describe | None = None
) -> FailureSignature:
    """The signature of one case: its bad samples' usual verdict, and the assertion those
    samples most often failed first."""
    bad = [s for s in samples if s.verdict is not Verdict.OK]
    verdicts = Counter(s.verdict for s in bad)
    # The most frequent; ties broken by name so the answer never depends on sample order.
    dominant = min(verdicts, key=lambda v: (-verdicts[v], v.value)) if verdicts else Verdict.WRONG
    firsts: Counter[tuple[int, str]] = Counter()
    thresholds: dict[tuple[int, str], float] = {}
    for s in bad:
        if s.verdict is not dominant:
            continue
        failed = [a for a in s.assertions if a.failed]
        if failed:
            first = min(failed, key=lambda a: a.index)
            firsts[(first.index, first.type)] += 1
            if first.threshold is not None:
                thresholds[(first.index, first.type)] = first.threshold
    if not firsts:
        return FailureSignature("", dominant)
    index, type_name = min(firsts, key=lambda k: (-firsts[k], k))
    shown = describe(case.suite, case.case_id, index) if describe is not None else None
    if shown is None:
        # What the run itself recorded: the type, its threshold if it has one, the position.
        limit = thresholds.get((index, type_name))
        value = f" {limit:g}" if limit is not None else ""
        shown = f"{type_name}{value} (assertion {index + 1})"
    return FailureSignature(shown, dominant)


def group_failures(
    cases: Iterable[CaseRecord],
    samples: Mapping[tuple[str, str], Sequence[SampleRecord]],
    describe: Describe | None = None,
) -> list[FailureGroup]:
    """Failing cases by signature, the largest group first."""
    groups: dict[FailureSignature, list[CaseRecord]] = {}
    for case in cases:
        if case.result is not CaseOutcome.FAIL:
            continue
        signature = failure_signature(case, samples.get((case.suite, case.case_id), ()), describe)
        groups.setdefault(signature, []).append(case)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [FailureGroup(sig, tuple(members)) for sig, members in ordered]


def case_trend(points: Sequence[HistoryPoint], run_id: str) -> CaseTrend:
    """New, still failing or flapping, from the scheduled runs of the case, whatever model
    ran them (a model bump does not make a long-failing case new); the mark says where
    the model changed inside the runs it rests on.

    `points` are the case's scheduled runs, oldest first, up to and including `run_id`
    (inconclusive runs are skipped: they say nothing about the content).
    """
    upto: list[HistoryPoint] = []
    for p in points:
        upto.append(p)
        if p.run_id == run_id:
            break
    decided = [p for p in upto if p.result in (CaseOutcome.PASS, CaseOutcome.FAIL)]
    window = decided[-FLAP_WINDOW:]
    changes = sum(1 for a, b in pairwise(window) if a.result != b.result)
    if changes >= FLAP_CHANGES:
        return _with_model_change(CaseTrend(Trend.FLAPPING), window)
    streak = 0
    for p in reversed(decided):
        if p.result is not CaseOutcome.FAIL:
            break
        streak += 1
    if streak >= 2:
        return _with_model_change(CaseTrend(Trend.STILL_FAILING, streak), decided[-streak:])
    return _with_model_change(CaseTrend(Trend.NEW), decided[-2:])


def _with_model_change(trend: CaseTrend, runs: Sequence[HistoryPoint]) -> CaseTrend:
    """The trend, noting the latest model change between consecutive `runs`."""
    for ago, (before, after) in enumerate(reversed(list(pairwise(runs)))):
        if before.model_id != after.model_id:
            change = f"{before.model_id} → {after.model_id}"
            return replace(trend, model_change=change, model_changed_ago=ago)
    return trend


__all__ = [
    "CaseTrend",
    "FailureGroup",
    "FailureSignature",
    "Trend",
    "case_trend",
    "failure_signature",
    "group_failures",
]
