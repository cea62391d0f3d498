"""Sequential sampling: draw samples only while a case's result is still undecided.

A fixed N spends the same samples on a case that passes every time as on one that sits on
its bar, and then flips the second between green and red from night to night. Here a case
starts with `min` samples and draws more only while Wald's sequential probability ratio
test (SPRT) cannot tell "the pass rate is at least bar + margin" from "the pass rate is at
most bar − margin". Rates inside that band are *marginal*: a case that reaches `max`
undecided is reported as marginal, never red.

Error rates are stated for the edges of the band: a case whose true rate is bar + margin is
called a fail with probability at most `false_fail`; one at bar − margin is called a pass
with probability at most `false_pass` (Wald's bounds; `bench/sim_sequential.py` measures
the exact rates).

Contract cases keep their meaning: every sample must pass, so the first broken sample
decides a fail and no more are drawn; a contract case whose `min` samples all pass stops
there. Samples that carry no content evidence (truncated, transport) never decide anything;
they use up the budget, and a case that runs out of budget because of them is
inconclusive, as with a fixed N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from redline.vocabulary.records import CaseOutcome
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import NON_CONTENT_VERDICTS, Verdict

#: What `redline run --adaptive` and `samples: {}` fill in.
DEFAULT_MIN = 3
DEFAULT_MAX = 10
DEFAULT_MARGIN = 0.15
DEFAULT_QUALITY_BAR = 0.8
#: Above this `samples.margin` the marginal band would cover every rate: nothing could decide.
MAX_MARGIN = 0.49
FALSE_FAIL = 0.01
FALSE_PASS = 0.30


@dataclass(frozen=True)
class SequentialPlan:
    """How many samples a case may draw, and against which bar it is decided."""

    min: int = DEFAULT_MIN
    max: int = DEFAULT_MAX
    bar: float = DEFAULT_QUALITY_BAR
    margin: float = DEFAULT_MARGIN
    contract: bool = False
    false_fail: float = FALSE_FAIL
    false_pass: float = FALSE_PASS

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.max:
            raise ValueError(f"samples min ({self.min}) must be between 1 and max ({self.max})")
        if not 0.0 < self.bar <= 1.0:
            raise ValueError(f"bar must be a rate in (0, 1], got {self.bar}")
        if not 0.0 < self.margin < 0.5:
            raise ValueError(f"margin must be in (0, 0.5), got {self.margin}")

    @property
    def band(self) -> tuple[float, float]:
        """The rates (low, high) the test tells apart; between them a case is marginal."""
        low = max(self.bar - self.margin, 0.01)
        high = min(self.bar + self.margin, 0.99)
        if high <= low:
            high = min(low + 0.02, 0.995)
        return low, high

    def decide(self, passes: int, failures: int, other: int = 0) -> CaseOutcome | None:
        """The case's result after these samples, or None while more samples are needed.

        `failures` are content failures (wrong, malformed, refused); `other` are samples that
        say nothing about content (truncated, transport).
        """
        drawn = passes + failures + other
        if self.contract:
            if failures:
                return CaseOutcome.FAIL
            if passes >= self.min:
                return CaseOutcome.PASS
            return _exhausted(drawn, self.max, other)
        if passes + failures >= self.min:
            llr = self._llr(passes, failures)
            if llr >= self._pass_bound:
                return CaseOutcome.PASS
            if llr <= self._fail_bound:
                return CaseOutcome.FAIL
        return _exhausted(drawn, self.max, other)

    def _llr(self, passes: int, failures: int) -> float:
        low, high = self.band
        return passes * math.log(high / low) + failures * math.log((1 - high) / (1 - low))

    @property
    def _pass_bound(self) -> float:
        return math.log((1 - self.false_fail) / self.false_pass)

    @property
    def _fail_bound(self) -> float:
        return math.log(self.false_fail / (1 - self.false_pass))

    def passes_to_pass(self, content: int) -> int:
        """The fewest passes among `content` content samples that this rule calls a pass
        (more than `content` when none would): what a sequential case's result states as
        its `required`, so `passes >= required` holds exactly when it passed."""
        if self.contract:
            return max(self.min, content)
        if content >= self.min:
            for passes in range(content + 1):
                if self._llr(passes, content - passes) >= self._pass_bound:
                    return passes
        return max(self.min, content + 1)

    def describe(self) -> str:
        if self.contract:
            return f"{self.min}–{self.max} samples, every one must pass"
        low, high = self.band
        return (
            f"{self.min}–{self.max} samples, bar {self.bar:.0%} "
            f"(marginal between {low:.0%} and {high:.0%})"
        )


@dataclass(frozen=True)
class SamplingSpec:
    """`samples: {min, max, margin, bar}` as written; the tier is resolved per case."""

    min: int = DEFAULT_MIN
    max: int = DEFAULT_MAX
    margin: float = DEFAULT_MARGIN
    bar: float | None = None

    def plan(self, tier: Tier) -> SequentialPlan:
        return SequentialPlan(
            min=self.min,
            max=self.max,
            bar=pass_rate_bar(tier, self.bar),
            margin=self.margin,
            contract=tier == Tier.CONTRACT,
        )


def pass_rate_bar(tier: Tier, bar: float | None) -> float:
    """The pass rate a sequential case must show: every sample for a contract case, else the
    written `bar` (DEFAULT_QUALITY_BAR when none is)."""
    if tier == Tier.CONTRACT:
        return 1.0
    return bar if bar is not None else DEFAULT_QUALITY_BAR


def passes_needed(bar: float, samples: int) -> int:
    """How many of `samples` must pass to meet the pass-rate `bar`."""
    return math.ceil(bar * samples - 1e-9)


def adaptive_plan(tier: Tier, samples: int, required: int) -> SequentialPlan:
    """`redline run --adaptive` for a case written with a fixed N: its own bar, as a rate."""
    bar = required / samples
    return SamplingSpec(bar=max(0.05, min(bar, 0.95))).plan(tier)


@dataclass
class SequentialDraw:
    """One sequentially sampled case while it is drawn: samples out, verdicts in.

    The test reads the samples in index order, whatever order they finish in: a first look
    at `min`, then one after each further sample, stopping at the first look that decides.
    A batch is drawn in parallel, so samples past that look may already be drawn when it
    decides; they are kept (`uncounted`), but the decision never depends on them.
    """

    plan: SequentialPlan
    drawn: int = 0
    #: Of the samples up to the decision (all read so far while undecided).
    passes: int = 0
    failures: int = 0
    other: int = 0
    counts: dict[Verdict, int] = field(default_factory=dict)
    _verdicts: dict[int, Verdict] = field(default_factory=dict, repr=False)
    _decision: CaseOutcome | None = None

    @property
    def counted(self) -> int:
        """The samples read in index order: those the decision (or the wait for it) rests on."""
        return self.passes + self.failures + self.other

    @property
    def uncounted(self) -> int:
        """Samples in beyond the decision: drawn in its batch after the test had stopped."""
        return len(self._verdicts) - self.counted if self._decision is not None else 0

    def add(self, index: int, verdict: Verdict) -> None:
        self._verdicts[index] = verdict
        while self._decision is None and self.counted in self._verdicts:
            self._count(self._verdicts[self.counted])
            if self.counted >= self.plan.min:
                self._decision = self.plan.decide(self.passes, self.failures, self.other)

    def _count(self, verdict: Verdict) -> None:
        self.counts[verdict] = self.counts.get(verdict, 0) + 1
        if verdict is Verdict.OK:
            self.passes += 1
        elif verdict in NON_CONTENT_VERDICTS:
            self.other += 1
        else:
            self.failures += 1

    def decision(self) -> CaseOutcome | None:
        return self._decision

    def more(self) -> range:
        """The indices of the next batch once every drawn sample is read: as many as could
        decide a pass (none once the case is decided)."""
        if self.counted < self.drawn or self._decision is not None:
            return range(0)
        batch = 1
        while (
            self.drawn + batch < self.plan.max
            and self.plan.decide(self.passes + batch, self.failures, self.other) is None
        ):
            batch += 1
        start = self.drawn
        self.drawn += batch
        return range(start, self.drawn)


def _exhausted(drawn: int, maximum: int, other: int) -> CaseOutcome | None:
    if drawn < maximum:
        return None
    return CaseOutcome.INCONCLUSIVE if other else CaseOutcome.MARGINAL


__all__ = ["SamplingSpec", "SequentialDraw", "SequentialPlan", "adaptive_plan"]
