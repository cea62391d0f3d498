"""Benchmark: `compare`, `history` and report building over a large store.

Builds a store of 500 runs × 200 cases × 5 samples (500,000 samples) through RunStore's
writing API, then times the engine calls behind `redline compare A B`, `redline history
CASE` and `redline report`. Target: compare and history under 1 s each.

    uv run python bench/bench_compare.py [--runs 500] [--cases 200] [--samples 5]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from redline.config import Price  # noqa: E402
from redline.deciding.compare import compare_cases, compare_runs  # noqa: E402
from redline.deciding.history import case_history, find_marginal  # noqa: E402
from redline.report import build_run_report  # noqa: E402
from redline.report.html import html_report  # noqa: E402
from redline.report.junit import junit_xml  # noqa: E402
from redline.running.budget import HISTORY_RUNS  # noqa: E402
from redline.running.store import RunStore  # noqa: E402
from redline.running.usage import usd  # noqa: E402
from redline.vocabulary.records import RunKind  # noqa: E402
from redline.vocabulary.verdicts import Verdict  # noqa: E402
from runfactory import CaseSpec, RunSpec, write_run  # noqa: E402

T = TypeVar("T")
_PRICES = {
    "openai:model-2025-01-01": Price(2.0, 8.0),
    "openai:model-2025-06-01": Price(3.0, 15.0),
}
_VERDICTS = [Verdict.OK] * 16 + [
    Verdict.WRONG,
    Verdict.MALFORMED,
    Verdict.TRUNCATED,
    Verdict.TRANSPORT,
]


def _populate(store: RunStore, runs: int, cases: int, samples: int) -> list[str]:
    rng = random.Random(7)
    manifest = {f"cases/suite/{i:04d}.yaml": f"{i:064x}" for i in range(cases)}
    manifest["prompt:suite"] = "f" * 64
    ids = []
    for r in range(runs):
        run_id = f"run{r:05d}"
        day, minute = divmod(r, 24 * 60)
        started = (
            f"2025-{1 + day // 28:02d}-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
        )
        specs = []
        for c in range(cases):
            verdicts = [rng.choice(_VERDICTS) for _ in range(samples)]
            usage = [(rng.uniform(80.0, 400.0), rng.randint(40, 200)) for _ in range(samples)]
            specs.append(
                CaseSpec(
                    f"{c:04d}-case",
                    verdicts,
                    suite="suite",
                    required=samples - 1,
                    case_hash=f"{c:064x}",
                    outputs=[f"output {r} {c} {i} " * 20 for i in range(samples)],
                    assertions=[()] * samples,
                    latency_ms=[latency for latency, _ in usage],
                    input_tokens=300 + c,
                    output_tokens=[tokens for _, tokens in usage],
                )
            )
        write_run(
            store,
            RunSpec(
                run_id,
                specs,
                started_at=started,
                finished_at=started,
                kind=RunKind.RERUN if r % 10 == 9 else RunKind.RUN,
                model_id="openai:model-2025-01-01" if r < runs // 2 else "openai:model-2025-06-01",
                git_commit=f"{r:040x}",
                manifest=manifest,
            ),
        )
        ids.append(run_id)
    return ids


#: Seconds of the last `_timed` call, for ratios between two timings of one run.
_seconds: list[float] = []


def _timed(label: str, fn: Callable[[], T], repeat: int = 3) -> T:
    best = float("inf")
    result: T
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    print(f"{label:<48} {best * 1000:9.1f} ms")
    _seconds.append(best)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="redline-bench-") as tmp:
        path = Path(tmp) / "redline.db"
        with RunStore.open(path) as store:
            start = time.perf_counter()
            ids = _populate(store, args.runs, args.cases, args.samples)
            built = time.perf_counter() - start
        size = path.stat().st_size / 1e6
        total = args.runs * args.cases * args.samples
        print(
            f"store: {args.runs} runs × {args.cases} cases × {args.samples} samples "
            f"= {total:,} samples, {size:.0f} MB, built in {built:.1f} s"
        )
        with RunStore.open(path) as store:
            a, b = ids[len(ids) // 2 - 2], ids[-1]
            quality = _timed(
                "compare, pass rates only (no usage read)",
                lambda: compare_cases(store.run(a), store.cases(a), store.run(b), store.cases(b)),
            )
            comparison = _timed(
                f"compare_runs({a}, {b}) priced", lambda: compare_runs(store, a, b, _PRICES.get)
            )
            ratio = _seconds[-1] / _seconds[-2]
            print(f"  with latency, tokens and cost: {ratio:.2f}× the pass-rate-only compare")
            assert len(quality.rows) == len(comparison.rows)
            print(
                f"  {len(comparison.deltas)} case deltas, "
                f"{len(comparison.significant_drops)} significant drops, cost per 1k calls "
                f"{usd(comparison.total.usage_a.cost_per_1k)} → "
                f"{usd(comparison.total.usage_b.cost_per_1k)}"
            )
            history_tokens = _timed(
                f"token_history (cost estimate, last {HISTORY_RUNS} runs)",
                lambda: store.token_history("openai:model-2025-06-01", HISTORY_RUNS),
            )
            print(f"  {len(history_tokens)} cases with a token history")
            history = _timed(
                "case_history(0100-case) + find_marginal",
                lambda: (h := case_history(store, "0100-case"), find_marginal(h.scheduled)),
            )[0]
            print(f"  {len(history.scheduled)} scheduled points, {len(history.reruns)} reruns")
            report = _timed(f"build_run_report({b})", lambda: build_run_report(store, b), 1)
            _timed("junit_xml", lambda: junit_xml(report), 1)
            _timed("html_report", lambda: html_report(report), 1)
    print("targets: compare < 1000 ms, history < 1000 ms, token history < 1000 ms")


if __name__ == "__main__":
    main()
