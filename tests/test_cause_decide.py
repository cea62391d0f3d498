"""The statistics behind a cause: each conclusion needs the evidence its test needs."""

from __future__ import annotations

import importlib.util
import itertools
import random
from collections import Counter
from pathlib import Path

import pytest

from redline.deciding.arms import look_shares
from redline.deciding.cause import (
    ArmCounts,
    ArmKind,
    Bar,
    Settings,
    StoredRun,
    decide,
    samples_to_decide,
)
from redline.deciding.decision import History
from redline.deciding.stats import at_least, difference_interval
from redline.vocabulary.causes import Cause

CONTRACT = Bar(5, 5)
QUALITY = Bar(5, 4)
ALPHA = 0.025  # the last look's share of a 95% confidence


def arm(passes: int, samples: int, kind: ArmKind = ArmKind.REFERENCE_PROMPT) -> ArmCounts:
    return ArmCounts(kind, kind.value, "m", "r", passes, samples)


def red(passes: int, samples: int) -> ArmCounts:
    return arm(passes, samples, ArmKind.RED)


def test_newcombe_interval_matches_the_published_example() -> None:
    # Newcombe (1998), method 10: 56/70 vs 48/80 → 0.0524 to 0.3339.
    low, high = difference_interval(56, 70, 48, 80, 0.95)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_newcombe_interval_does_not_collapse_when_both_rates_are_extreme() -> None:
    low, high = difference_interval(3, 3, 3, 3, 0.95)
    assert low < -0.4 and high > 0.4


def test_at_least_is_the_binomial_tail() -> None:
    assert at_least(5, 5, 0.8) == pytest.approx(0.8**5)
    assert at_least(5, 4, 0.5) == pytest.approx(6 / 32)
    assert at_least(5, 0, 0.0) == 1.0 and at_least(5, 6, 1.0) == 0.0


def test_a_clear_drop_convicts_the_change() -> None:
    d = decide(red(0, 10), [arm(10, 10)], CONTRACT, ALPHA, 0.15)
    assert d.cause is Cause.PROMPT and d.p_values["reference-prompt"] < 1e-4
    d = decide(red(0, 10), [arm(10, 10, ArmKind.REFERENCE_MODEL)], CONTRACT, ALPHA, 0.15)
    assert d.cause is Cause.MODEL


def test_the_smaller_p_value_names_the_change_when_both_arms_pass() -> None:
    d = decide(
        red(2, 20), [arm(12, 20), arm(20, 20, ArmKind.REFERENCE_MODEL)], CONTRACT, ALPHA, 0.15
    )
    assert d.cause is Cause.MODEL


@pytest.mark.parametrize(
    ("mine", "undone", "bar"),
    [
        ((28, 40), (40, 40), CONTRACT),  # a 30-point drop
        ((32, 40), (39, 40), CONTRACT),  # a real 17-point drop, not significant on its own
        ((30, 40), (36, 40), QUALITY),  # 15 points: exactly the margin
    ],
)
def test_a_real_drop_is_never_called_noise(
    mine: tuple[int, int], undone: tuple[int, int], bar: Bar
) -> None:
    assert decide(red(*mine), [arm(*undone)], bar, ALPHA, 0.15).cause is not Cause.NOISE


def test_noise_is_not_concluded_on_too_few_samples() -> None:
    assert decide(red(10, 10), [arm(10, 10)], CONTRACT, ALPHA, 0.15).cause is Cause.UNDECIDED
    # Nothing changed: the red configuration alone, but still not on one batch.
    assert decide(red(10, 10), [], CONTRACT, ALPHA, 0.15).cause is Cause.UNDECIDED
    assert decide(red(19, 20), [], CONTRACT, ALPHA, 0.15).cause is Cause.NOISE


def test_noise_is_reachable_when_the_rates_are_the_same() -> None:
    d = decide(red(34, 40), [arm(33, 40)], CONTRACT, ALPHA, 0.15)
    assert d.cause is Cause.NOISE
    assert d.p_values["reference-prompt no better"] < ALPHA


def test_the_case_is_at_fault_when_every_configuration_fails_its_bar() -> None:
    early = 0.0083  # an early look's share of a 95% confidence
    assert decide(red(0, 10), [arm(0, 10)], CONTRACT, early, 0.15).cause is Cause.CASE
    # 4 of 5 is a lower bar: one batch of 0/10 could still be a 1-in-50 case.
    assert decide(red(0, 10), [arm(0, 10)], QUALITY, early, 0.15).cause is Cause.UNDECIDED
    assert decide(red(0, 20), [arm(0, 20)], QUALITY, early, 0.15).cause is Cause.CASE
    # Rarely passing is failing: 2 in 40 per sample clears 4 of 5 almost never.
    assert decide(red(2, 40), [arm(1, 40)], QUALITY, ALPHA, 0.15).cause is Cause.CASE


def test_an_untested_model_change_never_clears_the_model() -> None:
    d = decide(red(0, 40), [], CONTRACT, ALPHA, 0.15, model_untested=True)
    assert d.cause is Cause.UNDECIDED and d.why == "model-untested"


def test_samples_to_decide_is_where_the_observed_rates_would_decide() -> None:
    mine, undone = red(7, 10), arm(9, 10)
    n = samples_to_decide(mine, [undone], CONTRACT, ALPHA, 0.15)
    assert n is not None and n > 10

    def at(k: int) -> Cause:
        return decide(red(round(0.7 * k), k), [arm(round(0.9 * k), k)], CONTRACT, ALPHA, 0.15).cause

    assert at(n) is not Cause.UNDECIDED and at(n - 1) is Cause.UNDECIDED


def _simulate(rate_undone: float, rate_mine: float, trials: int = 300) -> Counter[Cause]:
    """The whole batched procedure at its default settings, on simulated draws."""
    rnd = random.Random(20261130)
    settings = Settings()
    looks = settings.looks
    found: Counter[Cause] = Counter()
    for _ in range(trials):
        u = m = n = 0
        for i, target in enumerate(looks):
            u += sum(rnd.random() < rate_undone for _ in range(target - n))
            m += sum(rnd.random() < rate_mine for _ in range(target - n))
            n = target
            d = decide(
                red(m, n), [arm(u, n)], CONTRACT, settings.alpha_at(i, len(looks)), settings.margin
            )
            if d.cause is not Cause.UNDECIDED or i == len(looks) - 1:
                found[d.cause] += 1
                break
    return found


def test_the_batched_procedure_keeps_its_error_rates() -> None:
    same = _simulate(0.8, 0.8)
    assert same[Cause.PROMPT] / 300 <= 0.05  # a harmless change is rarely convicted
    drop = _simulate(1.0, 0.8)
    assert drop[Cause.NOISE] / 300 <= 0.01  # a 20-point drop is (almost) never called noise
    assert drop[Cause.PROMPT] / 300 >= 0.75  # and is usually caught within 40 samples


def _stored(passes: int, samples: int) -> tuple[StoredRun, ...]:
    return (StoredRun("n1", "run", "2026-11-01", passes, samples),)


def test_identical_arms_are_noise_on_balance_when_the_stored_history_agrees() -> None:
    stored = _stored(16, 20)
    ref = ArmCounts(ArmKind.REFERENCE_PROMPT, "ref", "m", "r", 32 + 16, 40 + 20, stored=stored)
    mine = red(32, 40)
    d = decide(mine, [ref], QUALITY, ALPHA, 0.15, final=True)
    assert d.cause is Cause.NOISE and d.why == "on-balance"
    # Not before the last look, and never without stored evidence.
    assert decide(mine, [ref], QUALITY, ALPHA, 0.15).cause is Cause.UNDECIDED
    bare = decide(red(32, 40), [arm(32, 40)], QUALITY, ALPHA, 0.15, final=True)
    assert bare.cause is Cause.UNDECIDED


def test_stored_history_that_disagrees_with_the_reruns_decides_nothing_on_balance() -> None:
    ref = ArmCounts(
        ArmKind.REFERENCE_PROMPT, "ref", "m", "r", 32 + 70, 40 + 70, stored=_stored(70, 70)
    )
    mine = ArmCounts(ArmKind.RED, "yours", "m", "r", 33, 40)
    assert decide(mine, [ref], QUALITY, ALPHA, 0.15, final=True).cause is not Cause.NOISE


def test_drift_needs_nothing_changed_and_a_significant_drop_from_the_history() -> None:
    history = History(before=(25, 25), runs_before=5, red_run=(0, 5), drift_possible=True)
    now = ArmCounts(ArmKind.RED, "yours", "m", "r", 25 + 10, 25 + 10, stored=_stored(25, 25))
    d = decide(now, [], CONTRACT, ALPHA, 0.15, history=history)
    assert d.cause is Cause.DRIFT and d.why == "red-run"
    changed = History(before=(25, 25), runs_before=5, red_run=(0, 5), drift_possible=False)
    assert decide(now, [], CONTRACT, ALPHA, 0.15, history=changed).cause is not Cause.DRIFT
    # An 80% case red by chance (2 of 5) is not drift.
    flaky = History(before=(80, 100), runs_before=20, red_run=(2, 5), drift_possible=True)
    again = ArmCounts(ArmKind.RED, "yours", "m", "r", 80 + 16, 100 + 20, stored=_stored(80, 100))
    assert decide(again, [], QUALITY, ALPHA, 0.15, history=flaky).cause is Cause.NOISE


def test_a_bar_raised_above_the_rate_is_settings_with_both_bars() -> None:
    history = History(old_bar=Bar(4, 3))
    rate = red(80, 100)
    assert decide(rate, [], Bar(10, 9), ALPHA, 0.15, history=history).cause is Cause.SETTINGS
    # The same rate under the old bar alone: noise, not settings.
    assert decide(rate, [], Bar(4, 3), ALPHA, 0.15, history=history).cause is Cause.NOISE


def test_noise_on_balance_needs_the_difference_one_standard_error_below_the_margin() -> None:
    # 64/80 against 50/70 (8.6 points apart): within the margin at 80%, not at one standard
    # error (84%) — the counts of a 20-point drop that came out a little high.
    ref = ArmCounts(ArmKind.REFERENCE_PROMPT, "ref", "m", "r", 64, 80, stored=_stored(56, 70))
    d = decide(red(50, 70), [ref], QUALITY, ALPHA, 0.15, final=True)
    assert d.cause is Cause.UNDECIDED
    # Nearer the same rate (4.3 points apart): noise on balance, said so.
    d = decide(red(53, 70), [ref], QUALITY, ALPHA, 0.15, final=True)
    assert d.cause is Cause.NOISE and d.why == "on-balance"


def test_a_well_sampled_reference_leaves_its_share_to_your_configuration() -> None:
    # Two weeks of nightlies (70 samples) of the reference, none of yours: Step 1 plans to
    # bring both arms toward 3 × 40 in all, drawing at most 2 × 40 per arm; the reference
    # draws one batch of 10 at the first look, your configuration most of the rest.
    two_weeks = [("m", 70), ("m", 0)]
    assert [look_shares(two_weeks, n, 40) for n in (10, 20, 30, 40)] == [
        [10, 30],
        [10, 70],
        [25, 95],
        [45, 115],
    ]
    # Without stored evidence every arm draws the look's size, as before.
    assert look_shares([("m", 0), ("old", 0), ("m", 0)], 30, 40) == [30, 30, 30]
    # Nor does one arm alone (nothing to compare, no "noise on balance") draw more.
    assert look_shares([("m", 25)], 40, 40) == [40]
    # The shares go to the arm with the fewest samples in all, and add up to the plan.
    arms = [("m", 40), ("m", 5), ("m", 0)]
    shares = look_shares(arms, 40, 40)
    totals = [stored + drawn for (_, stored), drawn in zip(arms, shares, strict=True)]
    assert sum(shares) == 240 and min(shares) >= 10 and max(totals) - min(totals) <= 1
    # Samples never move to another model (its price differs): the old model's arm draws
    # by its own stored evidence, whatever is stored or drawn on the other model.
    assert look_shares([("m", 70), ("old", 70), ("m", 0)], 40, 40) == [45, 50, 115]
    assert look_shares([("old", 70), ("m", 0)], 40, 40)[0] == 50
    # Each look only adds to what every arm drew at the one before.
    for stored in ([70, 0], [40, 0], [70, 35], [12, 3, 0], [0, 0]):
        looks = [look_shares([("m", n) for n in stored], k, 80) for k in range(1, 81)]
        for before, after in itertools.pairwise(looks):
            assert all(a <= b for a, b in zip(before, after, strict=True))


def test_the_thinner_the_stored_evidence_the_more_step_1_draws() -> None:
    def most(*stored: int) -> int:
        return sum(look_shares([("m", n) for n in stored], 40, 40))

    # Never fewer than the budget per arm, never more than twice it.
    assert most(0, 0) == 80 and most(200, 200) == 80
    assert most(70, 70) == 100 and most(70, 35) == 135 and most(70, 0) == 160
    assert most(40, 0) == most(5, 0) == 160


def _step_one(rate_ref: float, rate_mine: float, nightlies: int, trials: int) -> Counter[Cause]:
    """Step 1 as `bench/sim_triage.py` runs it (the analysis's shares, looks and decisions)
    with stored nightlies of 5 samples of the reference and none of yours."""
    path = Path(__file__).resolve().parents[1] / "bench" / "sim_triage.py"
    spec = importlib.util.spec_from_file_location("sim_triage", path)
    assert spec is not None and spec.loader is not None
    sim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim)
    rnd = random.Random(20261201)
    settings = Settings()
    found: Counter[Cause] = Counter()
    for _ in range(trials):
        cause, _drawn = sim.trial(rnd, settings, rate_ref, rate_mine, nightlies, 0)
        found[cause] += 1
    return found


def test_with_two_weeks_of_reference_nightlies_a_harmless_change_ends_as_noise() -> None:
    same = _step_one(0.8, 0.8, 14, 300)
    assert same[Cause.NOISE] / 300 >= 0.87  # 40% with no stored run, 86% before the shares
    assert same[Cause.PROMPT] / 300 <= 0.04
    drop = _step_one(0.8, 0.6, 14, 300)
    assert drop[Cause.PROMPT] / 300 >= 0.68  # 46% with no stored run, 62% before the shares
    assert drop[Cause.NOISE] / 300 <= 0.07


@pytest.mark.parametrize("nightlies", [8, 14])
def test_with_stored_reference_nightlies_noise_is_decided_and_drops_still_convicted(
    nightlies: int,
) -> None:
    # The bar: at the default budget, at least 90% of harmless changes on an 80% case end
    # as noise, at most 2% are convicted, and a 20-point drop is convicted at least as
    # often as before Step 1 drew more on thin evidence (61% with 8 nightlies, 75% with 14).
    trials = 2000
    same = _step_one(0.8, 0.8, nightlies, trials)
    assert same[Cause.NOISE] / trials >= 0.92
    assert same[Cause.PROMPT] / trials <= 0.015
    drop = _step_one(0.8, 0.6, nightlies, trials)
    assert drop[Cause.PROMPT] / trials >= (0.7 if nightlies == 8 else 0.77)
    assert drop[Cause.NOISE] / trials <= 0.05
