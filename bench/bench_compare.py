"""Benchmark: `compare`, `history` and report building over a large store.

Builds a store of 500 runs × 200 cases × 5 samples (500,000 samples) through RunStore's
writing API, then times the engine calls behind `redline compare A B`, `redline history
CASE` and `redline report`. Target: compare and history under 1 s each.

    uv run python bench/bench_compare.py [--runs 500] [--cases 200] [--samples 5]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from redline.config import Price
from redline.deciding.compare import compare_cases, compare_runs
from redline.deciding.history import case_history, find_marginal
from redline.providers.completion import FinishReason
from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.junit import junit_xml
from redline.running.budget import HISTORY_RUNS
from redline.running.outcome import case_outcome
from redline.running.records import (
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.running.store import RunStore
from redline.running.usage import usd
from redline.running.verdicts import Verdict

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
        record = RunRecord(
            id=run_id,
            kind=RunKind.RERUN if r % 10 == 9 else RunKind.RUN,
            status=RunStatus.FINISHED,
            result=RunResult.RED,
            started_at=started,
            finished_at=started,
            model_id="openai:model-2025-01-01" if r < runs // 2 else "openai:model-2025-06-01",
            model_alias="default",
            suites=("suite",),
            git_commit=f"{r:040x}",
            redline_version="0.1.0",
            manifest=manifest,
        )
        case_rows = []
        sample_rows = []
        for c in range(cases):
            case_id = f"{c:04d}-case"
            verdicts = [rng.choice(_VERDICTS) for _ in range(samples)]
            counts = {v: verdicts.count(v) for v in Verdict}
            for i, v in enumerate(verdicts):
                sample_rows.append(
                    SampleRecord(
                        run_id=run_id,
                        suite="suite",
                        case_id=case_id,
                        index=i,
                        output=f"output {r} {c} {i} " * 20,
                        verdict=v,
                        finish_reason=FinishReason.STOP,
                        model=record.model_id,
                        latency_ms=rng.uniform(80.0, 400.0),
                        input_tokens=300 + c,
                        output_tokens=rng.randint(40, 200),
                        created_at=started,
                    )
                )
            required = samples - 1
            case_rows.append(
                CaseRecord(
                    run_id=run_id,
                    suite="suite",
                    case_id=case_id,
                    tier="quality",
                    model_id=record.model_id,
                    samples=samples,
                    required=required,
                    passes=counts[Verdict.OK],
                    result=case_outcome(required, counts),
                    verdicts=counts,
                    case_hash=f"{c:064x}",
                )
            )
        store.add_run(record, case_rows, sample_rows)
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
