"""Simulation: triage Step 1 with stored evidence, at the default budget.

Pure Python, seeded, one command (`uv run python bench/sim_triage.py`), under a minute.

Each trial is one red case on a branch whose prompt changed. The reference configuration
has stored nightlies (5 samples each, the red run's bar 4 of 5) inside the window; the
red configuration has the runs stored for it (none for a branch's first run). Step 1 then
runs exactly as `redline rerun` does: `look_by_look` at the default looks and error
spending, each look's samples planned and shared between the arms by `look_shares` (more
drawn when stored evidence is thin), `decide_arms` on the arms' counts (stored + drawn) at
every look, "noise on balance" at the last. A harmless change keeps the rate; a drop takes
20 points off it. Reported per row: the conclusion's shares and the mean samples drawn by
the reference arm and by yours (the most each may draw is `look_shares` at the budget).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from redline.deciding.arms import (
    EVIDENCE_PER_ARM,
    MOST_DRAWN,
    ArmCounts,
    ArmKind,
    StoredRun,
    look_shares,
)
from redline.deciding.decision import (
    Bar,
    Decision,
    History,
    Settings,
    decide_arms,
    look_by_look,
)
from redline.vocabulary.causes import Cause

BAR = Bar(5, 4)
NIGHTLY = 5


def _stored(rng: random.Random, rate: float, runs: int) -> tuple[StoredRun, ...]:
    out = []
    for i in range(runs):
        passes = sum(rng.random() < rate for _ in range(NIGHTLY))
        out.append(StoredRun(f"n{i}", "run", f"2026-11-{i + 1:02d}", passes, NIGHTLY, (5, 4)))
    return tuple(out)


def trial(
    rng: random.Random, settings: Settings, p_ref: float, p_red: float, ref_runs: int, red_runs: int
) -> tuple[Cause, tuple[int, int]]:
    """One Step 1 on simulated draws: the conclusion and the samples drawn by the
    reference arm and by yours."""
    stored = {
        ArmKind.REFERENCE_PROMPT: _stored(rng, p_ref, ref_runs),
        ArmKind.RED: _stored(rng, p_red, red_runs),
    }
    rates = {ArmKind.REFERENCE_PROMPT: p_ref, ArmKind.RED: p_red}
    drawn = {kind: [0, 0] for kind in rates}

    def draw(target: int) -> bool:
        kinds = list(drawn)
        have = [("m", sum(r.samples for r in stored[kind])) for kind in kinds]
        for kind, share in zip(kinds, look_shares(have, target, settings.budget), strict=True):
            counts = drawn[kind]
            more = share - counts[1]
            counts[0] += sum(rng.random() < rates[kind] for _ in range(more))
            counts[1] = max(share, counts[1])
        return False

    def arms() -> list[ArmCounts]:
        out = []
        for kind, (passes, samples) in drawn.items():
            sp = sum(r.passes for r in stored[kind])
            sn = sum(r.samples for r in stored[kind])
            out.append(
                ArmCounts(
                    kind, kind.value, "m", "r", passes + sp, samples + sn, stored=stored[kind]
                )
            )
        return out

    def decide_at(alpha: float, final: bool) -> Decision:
        return decide_arms(arms(), BAR, alpha, settings, history=History(), final=final)

    looked = look_by_look(settings, draw, decide_at)
    return looked.decision.cause, (drawn[ArmKind.REFERENCE_PROMPT][1], drawn[ArmKind.RED][1])


def table(seed: int, trials: int) -> list[str]:
    rng = random.Random(seed)
    settings = Settings()
    lines = [
        "| stored runs (reference / yours) | case | harmless change: noise | harmless: "
        "called prompt | 20-point drop: prompt | drop called noise | "
        "mean drawn: reference / yours | most drawn |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        (0, 0, "80%", lambda: 0.8),
        (8, 0, "80%", lambda: 0.8),
        (14, 0, "80%", lambda: 0.8),
        (14, 4, "80%", lambda: 0.8),
        (14, 7, "80%", lambda: 0.8),
        (0, 0, "90–100%", lambda: rng.uniform(0.9, 1.0)),
        (14, 0, "90–100%", lambda: rng.uniform(0.9, 1.0)),
    ]
    for ref_runs, red_runs, name, base_rate in rows:
        same: Counter[Cause] = Counter()
        drop: Counter[Cause] = Counter()
        used: list[tuple[int, int]] = []
        stored = [("m", ref_runs * NIGHTLY), ("m", red_runs * NIGHTLY)]
        most = look_shares(stored, settings.budget, settings.budget)
        for _ in range(trials):
            base = base_rate()
            cause, n = trial(rng, settings, base, base, ref_runs, red_runs)
            same[cause] += 1
            used.append(n)
            cause, n = trial(rng, settings, base, base - 0.2, ref_runs, red_runs)
            drop[cause] += 1
            used.append(n)
        lines.append(
            f"| {ref_runs} / {red_runs} | {name} | {same[Cause.NOISE] / trials:.1%} | "
            f"{same[Cause.PROMPT] / trials:.1%} | {drop[Cause.PROMPT] / trials:.1%} | "
            f"{drop[Cause.NOISE] / trials:.1%} | {statistics.fmean(u[0] for u in used):.1f} / "
            f"{statistics.fmean(u[1] for u in used):.1f} | {most[0]} / {most[1]} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    started = time.perf_counter()
    settings = Settings()
    print(
        f"Step 1 at the default budget ({settings.budget} per arm; with stored evidence up "
        f"to what brings every arm to {EVIDENCE_PER_ARM:g} × it, at most {MOST_DRAWN:g} × it "
        f"per arm; looks at {', '.join(map(str, settings.looks))} of {settings.budget}), a "
        f"4-of-5 bar, {args.trials} trials a row:\n"
    )
    print("\n".join(table(args.seed, args.trials)))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
