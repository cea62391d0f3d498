"""Simulation: fixed N against sequential sampling, on a population of nightly cases.

Pure Python, seeded, one command (`uv run python bench/sim_sequential.py`), under a minute.

Population: quality cases with a bar of 80% (the 4-of-5 default). Most cases pass nearly
always, some sit close to their bar, a few are poor. On a "regression night" a few cases lose
20 points of pass rate. A *false alarm* is a case reported red on a night where its rate did
not change and sits at or above its bar (a case that is truly below its bar and fails is
right, not an alarm); *power* is the share of dropped cases reported red (and, second figure, red or
marginal: both put the case in front of a person).

Fixed N uses the same bar scaled to N (3 → 3 of 3, 5 → 4 of 5, 10 → 8 of 10). Every night
goes through the runner's own code: `running.planning.plan_run` plans it,
`running.schedule.Schedule` hands the samples out (a sequential case's batches included)
and `running.run_record.case_result` decides each case. Every sample handed out is drawn
at once and they finish in random order, so "mean samples" is the most a run pays (the
samples of a deciding batch after the decision included: "drew after the stop" is the
share of case-nights with any); the results do not depend on that order.

The second table does the same for triage Step 1: the real decision rule of
`redline.deciding.cause` (prompt / noise / undecided) in its batches, against the same rule at a
fixed 40 samples per arm.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from redline.deciding.cause import ArmCounts, ArmKind, Bar, Settings, decide
from redline.running.options import RunOptions
from redline.running.pipeline import SampleJob
from redline.running.planning import Plan, plan_run
from redline.running.run_record import case_result
from redline.running.schedule import Schedule
from redline.suite.cases import Case, Suite
from redline.vocabulary.causes import Cause
from redline.vocabulary.outcome import scale_required
from redline.vocabulary.records import CaseOutcome
from redline.vocabulary.sequential import SequentialPlan
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import Verdict

BAR = 0.8
DROP = 0.20


def population(rng: random.Random, n: int) -> list[float]:
    """True pass rates: 70% near 1, 15% good, 10% near the bar, 5% poor."""
    rates = []
    for _ in range(n):
        u = rng.random()
        if u < 0.70:
            rates.append(rng.uniform(0.97, 1.0))
        elif u < 0.85:
            rates.append(rng.uniform(0.90, 0.97))
        elif u < 0.95:
            rates.append(rng.uniform(BAR - 0.05, BAR + 0.10))
        else:
            rates.append(rng.uniform(0.3, 0.6))
    return rates


@dataclass(frozen=True)
class Policy:
    """How a night's cases are sampled: a fixed count, or a sequential plan."""

    name: str
    samples: int
    sampling: SequentialPlan | None = None


@dataclass
class Tally:
    false_alarms: int = 0
    stable_cases: int = 0
    dropped: int = 0
    caught_red: int = 0
    caught_flagged: int = 0
    marginal_stable: int = 0
    #: Case-nights whose deciding batch drew samples after the test had stopped.
    drew_after_stop: int = 0
    case_nights: int = 0

    def __post_init__(self) -> None:
        self.samples: list[int] = []


def night_cases(policy: Policy, cases: int) -> list[tuple[Suite, Case]]:
    """The night's cases as `redline run` loads them: quality tier, the policy's samples."""
    suite = Suite("sim", Path("sim"), "m", policy.samples, Tier.QUALITY, None, None, (), ())
    required = scale_required(4, 5, policy.samples)
    return [
        (
            suite,
            Case(
                f"c{i}",
                "sim",
                Path(f"c{i}.yaml"),
                {},
                {},
                Tier.QUALITY,
                policy.samples,
                required,
                False,
                (),
                sampling=policy.sampling,
            ),
        )
        for i in range(cases)
    ]


def run_night(
    rng: random.Random, chosen: list[tuple[Suite, Case]], rates: list[float], night: int
) -> tuple[Plan, dict[str, Counter[Verdict]]]:
    """One night through the runner's own planning and schedule: every sample handed out
    is drawn at once (the most a batch can cost) and they finish in random order."""
    plan = plan_run(chosen, RunOptions(), f"night{night}")
    schedule = Schedule(plan)
    rate = {case.id: p for (_, case), p in zip(chosen, rates, strict=True)}
    verdicts: dict[str, Counter[Verdict]] = {case.id: Counter() for _, case in chosen}
    in_flight: list[SampleJob] = []
    while True:
        while (job := schedule.take()) is not None:
            in_flight.append(job)
        if not in_flight:
            return plan, verdicts
        job = in_flight.pop(rng.randrange(len(in_flight)))
        verdict = Verdict.OK if rng.random() < rate[job.case.id] else Verdict.WRONG
        verdicts[job.case.id][verdict] += 1
        schedule.done(job, verdict)


def simulate(policy: Policy, seed: int, cases: int, nights: int) -> Tally:
    rng = random.Random(seed)
    rates = population(rng, cases)
    chosen = night_cases(policy, cases)
    tally = Tally()
    for night in range(nights):
        regression = night % 2 == 1
        dropped = set(rng.sample(range(cases), k=max(1, cases // 20))) if regression else set()
        today = [max(0.0, base - DROP) if i in dropped else base for i, base in enumerate(rates)]
        plan, verdicts = run_night(rng, chosen, today, night)
        for i, (_, case, planned) in enumerate(plan.cases):
            seq = plan.sequential.get((case.suite, case.id))
            result = case_result(case, planned, verdicts[case.id], seq.draw if seq else None)
            tally.samples.append(sum(verdicts[case.id].values()))
            tally.case_nights += 1
            tally.drew_after_stop += result.uncounted > 0
            if i in dropped:
                tally.dropped += 1
                tally.caught_red += result.outcome is CaseOutcome.FAIL
                tally.caught_flagged += result.outcome in (CaseOutcome.FAIL, CaseOutcome.MARGINAL)
            elif rates[i] >= BAR:
                tally.stable_cases += 1
                tally.false_alarms += result.outcome is CaseOutcome.FAIL
                tally.marginal_stable += result.outcome is CaseOutcome.MARGINAL
    return tally


def p95(values: list[int]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def nightly_table(cases: int, nights: int, seed: int) -> list[str]:
    policies = [
        Policy("fixed N=3", 3),
        Policy("fixed N=5", 5),
        Policy("fixed N=10", 10),
        Policy("sequential, default (3–10, margin 0.15)", 10, SequentialPlan(bar=BAR)),
        Policy(
            "sequential, more power (3–20, margin 0.15, false pass 10%)",
            20,
            SequentialPlan(max=20, bar=BAR, false_pass=0.10),
        ),
        Policy(
            "sequential, tight (3–15, margin 0.10, false pass 10%)",
            15,
            SequentialPlan(max=15, bar=BAR, margin=0.10, false_pass=0.10),
        ),
    ]
    lines = [
        "| sampling | false alarms / case / night | power: red | power: red or marginal "
        "| marginal (healthy cases) | mean samples | p95 samples | drew after the stop |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for policy in policies:
        t = simulate(policy, seed, cases, nights)
        lines.append(
            f"| {policy.name} | {t.false_alarms / t.stable_cases:.2%} | "
            f"{t.caught_red / t.dropped:.1%} | {t.caught_flagged / t.dropped:.1%} | "
            f"{t.marginal_stable / t.stable_cases:.2%} | "
            f"{statistics.fmean(t.samples):.2f} | {p95(t.samples):.0f} | "
            f"{t.drew_after_stop / t.case_nights:.2%} |"
        )
    return lines


def floor_line() -> str:
    """Why no rule reaches 90% power on a healthy case for 20 points at ~5 samples."""
    p = 0.98 - DROP
    n = math.ceil(math.log(0.10) / math.log(p))
    return (
        f"Bound: a case at 98% that drops to {p:.0%} passes n samples in a row with "
        f"probability {p:.2f}^n, so any rule that can call a healthy case green after n "
        f"samples misses such a drop at least that often: 90% power needs n ≥ {n} "
        "on every healthy case."
    )


def triage_table(seed: int, trials: int) -> list[str]:
    """Triage Step 1 (`redline rerun`): the real decision rule of `redline.deciding.cause`, batch by
    batch at its default looks and error spending, against a fixed 40 samples per arm."""
    rng = random.Random(seed)
    settings = Settings()
    bar = Bar(5, 4)

    def draws(p: float, n: int) -> int:
        return sum(rng.random() < p for _ in range(n))

    def batched(p_ref: float, p_red: float) -> tuple[Cause, int]:
        mine = undone = n = 0
        looks = settings.looks
        for i, target in enumerate(looks):
            undone += draws(p_ref, target - n)
            mine += draws(p_red, target - n)
            n = target
            alpha = settings.alpha_at(i, len(looks))
            cause = decide(
                ArmCounts(ArmKind.RED, "yours", "m", "r", mine, n),
                [ArmCounts(ArmKind.REFERENCE_PROMPT, "ref", "m", "r", undone, n)],
                bar,
                alpha,
                settings.margin,
            ).cause
            if cause is not Cause.UNDECIDED or i == len(looks) - 1:
                return cause, n
        raise AssertionError("unreachable")

    def fixed(p_ref: float, p_red: float) -> tuple[Cause, int]:
        n = settings.looks[-1]
        cause = decide(
            ArmCounts(ArmKind.RED, "yours", "m", "r", draws(p_red, n), n),
            [ArmCounts(ArmKind.REFERENCE_PROMPT, "ref", "m", "r", draws(p_ref, n), n)],
            bar,
            1.0 - settings.confidence,
            settings.margin,
        ).cause
        return cause, n

    lines = [
        "| Step 1 rule | 20-point drop: prompt | drop called noise | same rate: noise "
        "| same rate called a drop | mean samples / arm |",
        "|---|---|---|---|---|---|",
    ]
    for name, rule in (
        (f"batches (looks at {', '.join(map(str, settings.looks))})", batched),
        (f"fixed {settings.looks[-1]} per arm", fixed),
    ):
        drop: Counter[Cause] = Counter()
        same: Counter[Cause] = Counter()
        used: list[int] = []
        for _ in range(trials):
            base = rng.uniform(0.9, 1.0)
            cause, n1 = rule(base, base - DROP)
            drop[cause] += 1
            cause, n2 = rule(base, base)
            same[cause] += 1
            used += [n1, n2]
        lines.append(
            f"| {name} | {drop[Cause.PROMPT] / trials:.1%} | {drop[Cause.NOISE] / trials:.1%} | "
            f"{same[Cause.NOISE] / trials:.1%} | {same[Cause.PROMPT] / trials:.1%} | "
            f"{statistics.fmean(used):.1f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--nights", type=int, default=60)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"Nightly: {args.cases} cases × {args.nights} nights (every other night a regression:")
    print(f"5% of cases lose {DROP:.0%} of pass rate), bar {BAR:.0%}, seed {args.seed}\n")
    print("\n".join(nightly_table(args.cases, args.nights, args.seed)))
    print()
    print(floor_line())
    print("\nTriage Step 1 (1,000 red cases whose rate really dropped 20 points, 1,000 whose")
    print("rate did not change; reference rates 90-100%, a 4-of-5 bar):\n")
    print("\n".join(triage_table(args.seed, 1000)))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
