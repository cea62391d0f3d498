"""The one conclusion the arms' counts support, and when to look at them.

A drop is a one-sided Fisher exact test; "the same rate" is an equivalence test (the
Newcombe interval of the difference inside ±margin). Each look at the data spends part
of the error rate: the earlier looks share half of it, the last look has the other half,
so deciding early never inflates the chance of a wrong conclusion. With stored evidence,
the last look also decides "noise" on balance: the same equivalence test with a one
standard error bound instead of the analysis's confidence (see `decide`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from redline.deciding.arms import ArmCounts, ArmKind
from redline.deciding.stats import (
    at_least,
    difference_interval,
    fisher_one_sided,
    smallest_count,
    wilson_interval,
)
from redline.errors import UsageError
from redline.vocabulary.causes import Cause

#: A case that clears its bar in fewer runs than this (1 in 50) is failing, not marginal.
MARGINAL_FLOOR = 0.02
#: The smallest default batch: fewer samples per look tell nothing about a rate.
MIN_BATCH = 10
#: "Noise" is never concluded on fewer samples per arm than this (or the budget, if smaller).
NOISE_MIN_SAMPLES = 20
#: "Drift" needs at least this many stored samples of the same configuration before the red run.
DRIFT_MIN_HISTORY = 10
#: "Noise on balance" (the last look, stored evidence agreeing): the equivalence test at
#: this confidence instead of the analysis's own — the difference lies at least one standard
#: error below the margin (84%) — so a drop of the full margin is called noise in at most
#: 16% of analyses, and a drop beyond it less often; said so in the conclusion.
ON_BALANCE_CONFIDENCE = NormalDist().cdf(1.0)
#: The red run was picked for being red: to call that one run drift, its drop against the
#: stored history must be this many times less likely than the error rate of a look.
DRIFT_STRICTNESS = 10
#: A conviction that counts stored samples is held to this share of a look's error rate.
#: Stored samples were drawn on other days than the rerun, and with them Step 1 draws more
#: (`arms.group_draws`), where Fisher's exact test is less conservative than at 40 a side:
#: this share keeps false convictions under 1% (about 2% at the full rate), and the extra
#: samples keep the power to convict a real drop above what the full rate had with the
#: budget alone (`bench/sim_triage.py`).
STORED_CONVICTION = 0.4


@dataclass(frozen=True)
class Settings:
    """How hard to look: samples per arm, batch size, confidence, equivalence margin,
    and how far back stored runs count (days before the red run)."""

    budget: int = 40
    #: Samples per arm between looks; default a quarter of the budget, at least 10.
    batch: int | None = None
    confidence: float = 0.95
    margin: float = 0.15
    reference: str | None = None
    window_days: int = 14

    def __post_init__(self) -> None:
        if self.budget < 1 or (self.batch is not None and self.batch < 1):
            raise UsageError("the budget and the batch size must be at least 1 sample")
        if not 0.5 <= self.confidence < 1.0:
            raise UsageError("the confidence must be at least 0.5 and below 1 (e.g. 0.95)")
        if not 0.0 < self.margin < 1.0:
            raise UsageError("the margin must be a fraction between 0 and 1 (e.g. 0.2)")
        if self.window_days < 0:
            raise UsageError("the window must be 0 days or more (0: no stored runs count)")

    @property
    def looks(self) -> list[int]:
        """Samples per arm (drawn now) at which the evidence is examined."""
        batch = self.batch or max(MIN_BATCH, math.ceil(self.budget / 4))
        sizes = list(range(min(batch, self.budget), self.budget, batch))
        return [*sizes, self.budget]

    def alpha_at(self, look: int, looks: int) -> float:
        """Error rate spent at one look: half shared by the early looks, half at the last."""
        alpha = 1.0 - self.confidence
        if looks == 1:
            return alpha
        return alpha / 2 if look == looks - 1 else alpha / 2 / (looks - 1)


@dataclass(frozen=True)
class Bar:
    """The case's bar: `required` of `samples` must pass."""

    samples: int
    required: int

    def clears(self, rate: float) -> float:
        """How often one run at this per-sample rate clears the bar."""
        return at_least(self.samples, self.required, rate)

    @property
    def rate(self) -> float:
        """The per-sample rate the bar asks for."""
        return self.required / self.samples if self.samples else 0.0


@dataclass(frozen=True)
class History:
    """What the store says about the red configuration beyond the arms' counts.

    `before`: (passes, samples) of the same configuration stored before the red run;
    `red_run`: the red run's own counts; `drift_possible`: nothing in the repository
    changed between the reference and the red run; `old_bar`: the bar the case had
    before a settings change (at the reference, or in its stored runs).
    """

    before: tuple[int, int] = (0, 0)
    runs_before: int = 0
    red_run: tuple[int, int] = (0, 0)
    drift_possible: bool = False
    old_bar: Bar | None = None


@dataclass(frozen=True)
class Decision:
    cause: Cause
    p_values: Mapping[str, float]
    why: str = ""


def decide(
    red: ArmCounts,
    undo: Sequence[ArmCounts],
    bar: Bar,
    alpha: float,
    margin: float,
    model_untested: bool = False,
    min_noise: int = NOISE_MIN_SAMPLES,
    *,
    history: History | None = None,
    final: bool = False,
) -> Decision:
    """The conclusion the counts support at error rate `alpha`, or UNDECIDED.

    In this order:
    - a change is convicted when undoing it raises the pass rate (one-sided Fisher p <
      alpha, or alpha × STORED_CONVICTION when some arm counts stored samples);
    - drift, when nothing in the repository changed and the same configuration now fails
      significantly more than its stored history: the samples drawn since the red run at
      `alpha`, or the red run alone at `alpha / DRIFT_STRICTNESS`;
    - settings, when the bar moved above the case's measured rate: the top of its
      interval is below the new bar, while at the bottom of its interval it still clears
      the old bar in most runs;
    - the case is at fault when every configuration clears its bar in fewer than 1 run of
      50 even at the top of its interval;
    - noise needs, for every undone change, a one-sided equivalence test (the upper end
      of the Newcombe interval of "undone minus yours") showing that undoing it raises
      the rate by less than `margin`, plus `min_noise` samples in every arm and a red
      configuration that clears its bar in at least 1 run of 50 at the bottom of its
      interval (after a raised bar, only at the last look); at the `final` look with
      stored evidence in some arm that agrees with what the arm drew, "on balance" is
      enough: the same equivalence test at ON_BALANCE_CONFIDENCE (84%) instead.
    Without a way to run the reference model after a model change, neither "case" nor
    "noise" can be claimed.
    """
    level = 1.0 - 2.0 * alpha
    p_values = {
        u.kind.value: fisher_one_sided(u.passes, u.samples, red.passes, red.samples, "greater")
        for u in undo
    }
    strict = STORED_CONVICTION if any(a.stored for a in [red, *undo]) else 1.0
    convicted = [u for u in undo if p_values[u.kind.value] < alpha * strict]
    if convicted:
        best = min(convicted, key=lambda u: p_values[u.kind.value])
        cause = Cause.PROMPT if best.kind is ArmKind.REFERENCE_PROMPT else Cause.MODEL
        return Decision(cause, p_values)
    if model_untested:
        return Decision(Cause.UNDECIDED, p_values, "model-untested")
    history = history or History()
    drift = _drift(red, history, alpha, p_values)
    if drift:
        return Decision(Cause.DRIFT, p_values, drift)

    def clears_high(passes: int, samples: int) -> float:
        return bar.clears(wilson_interval(passes, samples, level)[1])

    def clears_low(passes: int, samples: int) -> float:
        return bar.clears(wilson_interval(passes, samples, level)[0])

    old = history.old_bar
    raised = old is not None and old.rate < bar.rate
    if old is not None and raised and red.samples >= min_noise:
        low, high = wilson_interval(red.passes, red.samples, level)
        if high < bar.rate and old.clears(low) >= 0.5:
            return Decision(Cause.SETTINGS, p_values)
    arms = [*undo, red]
    if all(clears_high(a.passes, a.samples) < MARGINAL_FLOOR for a in arms):
        return Decision(Cause.CASE, p_values)
    enough = all(a.samples >= min_noise for a in arms)
    passing = clears_low(red.passes, red.samples) >= MARGINAL_FLOOR
    proven = True
    for u in undo:
        high = difference_interval(u.passes, u.samples, red.passes, red.samples, level)[1]
        p_values[f"{u.kind.value} no better"] = _no_better_p(u, red, margin)
        proven = proven and high < margin
    # A raised bar is the more specific answer: noise waits for the last look.
    if proven and enough and passing and (final or not raised):
        return Decision(Cause.NOISE, p_values)
    on_balance_level = 2 * ON_BALANCE_CONFIDENCE - 1
    on_balance = all(
        difference_interval(u.passes, u.samples, red.passes, red.samples, on_balance_level)[1]
        < margin
        for u in undo
    )
    if final and enough and passing and on_balance and _stored_agrees(arms, alpha):
        return Decision(Cause.NOISE, p_values, "on-balance")
    return Decision(Cause.UNDECIDED, p_values)


def decide_arms(
    arms: Sequence[ArmCounts],
    bar: Bar,
    alpha: float,
    settings: Settings,
    *,
    model_untested: bool = False,
    history: History | None = None,
    final: bool = False,
) -> Decision:
    """`decide` on an analysis's arms (the red configuration among them) at its settings:
    how the cause analysis and the triage simulation call it."""
    red = next(a for a in arms if a.kind is ArmKind.RED)
    undo = [a for a in arms if a.kind is not ArmKind.RED]
    return decide(
        red,
        undo,
        bar,
        alpha,
        settings.margin,
        model_untested,
        min(NOISE_MIN_SAMPLES, settings.budget),
        history=history,
        final=final,
    )


def _drift(red: ArmCounts, history: History, alpha: float, p_values: dict[str, float]) -> str:
    """ "now" or "red-run" when the red configuration fails more than its stored history."""
    before_passes, before_samples = history.before
    if not history.drift_possible or before_samples < DRIFT_MIN_HISTORY:
        return ""
    # Samples of the red configuration since the red run: the arm minus what came before.
    now_passes, now_samples = red.passes - before_passes, red.samples - before_samples
    if now_samples > 0:
        p_now = fisher_one_sided(before_passes, before_samples, now_passes, now_samples)
        p_values["drift since the red run"] = p_now
        if p_now < alpha:
            return "now"
    if history.red_run[1] > 0:
        p_run = red_run_drift_p(history.before, history.red_run)
        p_values["drift in the red run"] = p_run
        if p_run < alpha / DRIFT_STRICTNESS:
            return "red-run"
    return ""


def red_run_drift_p(before: tuple[int, int], red_run: tuple[int, int]) -> float:
    """p of "the stored history passes more often than the red run" (one-sided Fisher);
    drift when below a look's error rate divided by DRIFT_STRICTNESS."""
    return fisher_one_sided(*before, *red_run)


def _stored_agrees(arms: Sequence[ArmCounts], alpha: float) -> bool:
    """Some arm counts stored evidence, and no arm's stored rate differs from what it drew
    (two-sided, at the strictness drift is judged with: a check, not the question)."""
    alpha = alpha / DRIFT_STRICTNESS
    with_stored = [a for a in arms if a.stored_counts[1] > 0]
    for a in with_stored:
        (sp, sn), (dp, dn) = a.stored_counts, a.drawn_counts
        if dn == 0:
            continue
        if min(fisher_one_sided(sp, sn, dp, dn), fisher_one_sided(dp, dn, sp, sn)) < alpha:
            return False
    return bool(with_stored)


def _no_better_p(a: ArmCounts, b: ArmCounts, margin: float) -> float:
    """p of the one-sided test "undoing the change raises the rate by `margin` or more"."""
    lo_alpha, hi_alpha = 1e-6, 0.499
    if not _no_better_at(a, b, margin, hi_alpha):
        return 1.0
    for _ in range(40):
        mid = (lo_alpha + hi_alpha) / 2
        if _no_better_at(a, b, margin, mid):
            hi_alpha = mid
        else:
            lo_alpha = mid
    return hi_alpha


def _no_better_at(a: ArmCounts, b: ArmCounts, margin: float, alpha: float) -> bool:
    high = difference_interval(a.passes, a.samples, b.passes, b.samples, 1.0 - 2.0 * alpha)[1]
    return high < margin


def samples_to_decide(
    red: ArmCounts,
    undo: Sequence[ArmCounts],
    bar: Bar,
    alpha: float,
    margin: float,
    limit: int = 5000,
) -> int | None:
    """Samples per arm at which the observed rates, held fixed, would be decided."""
    current = max([red.samples, *(u.samples for u in undo)], default=0)

    def decided(n: int) -> bool:
        def scaled(arm: ArmCounts) -> ArmCounts:
            return dataclasses.replace(arm, passes=round(arm.rate * n), samples=n, stored=())

        result = decide(scaled(red), [scaled(u) for u in undo], bar, alpha, margin)
        return result.cause is not Cause.UNDECIDED

    return smallest_count(decided, current, limit)


@dataclass(frozen=True)
class Looked:
    """Where the looks ended: the decision, whether it was the last look, or a stop."""

    decision: Decision
    final: bool
    stopped: bool


def look_by_look(
    settings: Settings,
    draw: Callable[[int], bool],
    decide_at: Callable[[float, bool], Decision],
    *,
    single_look: bool = False,
    after_look: Callable[[Decision], None] = lambda d: None,
) -> Looked:
    """Draw to each look's size and decide, until decided or at the last look.

    `draw(n)` brings every arm to n drawn samples and returns True when stopped (an
    unplanned look at a partial batch decides nothing); `decide_at(alpha, final)` decides
    on the counts at that look's share of the error rate. `single_look`: more samples
    cannot help (one arm, its twin untestable), so the first look is the last.
    """
    looks = settings.looks
    for index, target in enumerate(looks):
        if draw(target):
            return Looked(Decision(Cause.UNDECIDED, {}), final=True, stopped=True)
        final = index == len(looks) - 1 or single_look
        decision = decide_at(settings.alpha_at(index, len(looks)), final)
        if decision.cause is not Cause.UNDECIDED or final:
            return Looked(decision, final=final, stopped=False)
        after_look(decision)
    raise AssertionError("the last look always returns")
