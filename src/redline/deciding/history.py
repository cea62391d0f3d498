"""A case's pass counts across stored runs, and whether it lives on the edge.

Scheduled runs (`run`) form the series; reruns and replays are kept beside it, never
mixed in, because they answer a different question (docs/rules.md: Evidence is kept).

Marginal rule: a case is marginal when, in at least K consecutive scheduled runs up to
the latest one (default K = 3), its pass count was within one sample of its required
count (|passes − required| <= 1) and at least one of the last K of them missed a sample:
a case that passes every sample every night is solid, not marginal, even when its bar is
"all samples". Inconclusive runs are skipped, and the streak stops at the last change of
the case file (a new case hash is a new case). The samples needed
are those at which a 95% Wilson interval around the streak's pooled pass rate excludes
the bar required/samples of the latest run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from redline.deciding.stats import samples_needed
from redline.errors import CaseInSeveralSuites, CaseNotFound
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome, RunKind

DEFAULT_MARGINAL_RUNS = 3
_BLOCKS = "▁▂▃▄▅▆▇█"
_NO_RATE = "·"


@dataclass(frozen=True)
class HistoryPoint:
    run_id: str
    kind: RunKind
    parent_id: str | None
    started_at: str
    model_id: str
    samples: int
    passes: int
    required: int
    result: CaseOutcome
    case_hash: str
    #: Samples with a content verdict (truncated and transport say nothing about content).
    content_samples: int = 0
    #: The model id differs from the previous point of the same series.
    model_changed: bool = False
    #: The case hash differs from the previous point of the same series.
    case_changed: bool = False
    #: A comparison run (`run --against`): the reference run it repeats on another model.
    against: str | None = None

    @property
    def rate(self) -> float | None:
        """Pass rate over content samples; None when every sample was truncated or lost."""
        return self.passes / self.content_samples if self.content_samples else None


@dataclass(frozen=True)
class Marginal:
    """How long a case has sat at the edge, and what it would take to decide it."""

    runs: int
    since: str
    pooled_passes: int
    pooled_samples: int
    threshold: float
    samples_needed: int | None

    @property
    def rate(self) -> float:
        return self.pooled_passes / self.pooled_samples if self.pooled_samples else 0.0


@dataclass(frozen=True)
class CaseHistory:
    suite: str
    case_id: str
    scheduled: tuple[HistoryPoint, ...]
    #: Reruns, replays and comparison runs (`run --against`: another model on the same
    #: cases, not a night of this case's series), oldest first.
    reruns: tuple[HistoryPoint, ...]


def case_history(store: RunStore, case_id: str, suite: str | None = None) -> CaseHistory:
    """The case's series, oldest first; UsageError when unknown or in several suites.
    `case_id` may be `suite/case`, as run summaries, reports and `show` name a case."""
    rows = store.case_history(case_id, suite)
    if not rows and suite is None and "/" in case_id:
        suite, case_id = case_id.split("/", 1)
        rows = store.case_history(case_id, suite)
    if not rows:
        where = f" in suite {suite!r}" if suite else ""
        raise CaseNotFound(
            f"no stored result for case {case_id!r}{where}; check the id with `redline show RUN_ID`"
        )
    suites = sorted({c.suite for _, c in rows})
    if len(suites) > 1:
        raise CaseInSeveralSuites(
            case_id, suites, f"choose one with --suite, or write it as SUITE/{case_id}"
        )
    points = [
        HistoryPoint(
            run_id=run.id,
            kind=run.kind,
            parent_id=run.parent_id,
            started_at=run.started_at,
            model_id=case.model_id,
            samples=case.samples,
            passes=case.passes,
            required=case.required,
            result=case.result,
            case_hash=case.case_hash,
            content_samples=case.content_samples,
            against=run.against,
        )
        for run, case in rows
    ]
    scheduled = [p for p in points if p.kind is RunKind.RUN and p.against is None]
    return CaseHistory(
        suite=suites[0],
        case_id=case_id,
        scheduled=_mark_changes(scheduled),
        reruns=_mark_changes([p for p in points if p not in scheduled]),
    )


def _mark_changes(points: Sequence[HistoryPoint]) -> tuple[HistoryPoint, ...]:
    out: list[HistoryPoint] = []
    for p in points:
        prev = out[-1] if out else None
        out.append(
            replace(
                p,
                model_changed=prev is not None and prev.model_id != p.model_id,
                case_changed=prev is not None and prev.case_hash != p.case_hash,
            )
        )
    return tuple(out)


def find_marginal(
    points: Sequence[HistoryPoint], runs: int = DEFAULT_MARGINAL_RUNS, confidence: float = 0.95
) -> Marginal | None:
    """The marginal analysis of a scheduled series (see the module docstring), or None."""
    decided = [p for p in points if p.result is not CaseOutcome.INCONCLUSIVE and p.samples]
    if not decided:
        return None
    latest_hash = decided[-1].case_hash
    streak: list[HistoryPoint] = []
    for p in reversed(decided):
        near_bar = abs(p.passes - p.required) <= 1 or p.result is CaseOutcome.MARGINAL
        if p.case_hash != latest_hash or not near_bar:
            break
        streak.append(p)
    if len(streak) < runs or all(p.passes >= p.samples for p in streak[:runs]):
        return None
    streak.reverse()
    passes = sum(p.passes for p in streak)
    total = sum(p.samples for p in streak)
    latest = streak[-1]
    threshold = latest.required / latest.samples
    return Marginal(
        runs=len(streak),
        since=streak[0].started_at,
        pooled_passes=passes,
        pooled_samples=total,
        threshold=threshold,
        samples_needed=samples_needed(passes / total, threshold, confidence),
    )


def sparkline(rates: Sequence[float | None]) -> str:
    """One unicode block per run (▁ = 0%, █ = 100%); `·` where no rate exists."""
    chars = []
    for r in rates:
        if r is None:
            chars.append(_NO_RATE)
        else:
            chars.append(_BLOCKS[round(min(1.0, max(0.0, r)) * (len(_BLOCKS) - 1))])
    return "".join(chars)
