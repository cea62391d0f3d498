"""Search across a big run: `redline search` / the app's search over 20,000 samples.

The store of bench_triage (a red run of 1,000 cases × 20 samples, four earlier runs beside
it). A run's trigram index is built when it finishes; then searches, and the floor:
reading every output of the run and scanning it in Python. Target: < 200 ms.

    uv run python bench/bench_search.py [--cases 1000] [--samples 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_triage import build
from redline.running.search import search_run
from redline.running.store import RunStore
from redline.vocabulary.records import RunResult, RunStatus

TARGET_MS = 200.0
QUERIES = ("answer 700/3", "case-0042", "checked", "no such phrase anywhere", "wer 1")


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "redline.db"
        run_id = build(path, args.cases, args.samples)
        with RunStore.open(path) as store:
            start = time.perf_counter()
            store.finish_run(run_id, RunStatus.FINISHED, RunResult.RED, "2026-11-30T03:01:00")
            index_ms = _ms(start)
            start = time.perf_counter()
            first = search_run(store, run_id, QUERIES[0])
            first_ms = _ms(start)
            timings: dict[str, list[float]] = {q: [] for q in QUERIES}
            found: dict[str, int] = {}
            for _ in range(5):
                for q in QUERIES:
                    start = time.perf_counter()
                    found[q] = len(search_run(store, run_id, q))
                    timings[q].append(_ms(start))
            start = time.perf_counter()
            outputs = [s.output for s in store.samples(run_id)]
            scanned = sum("answer 700/3" in o.lower() for o in outputs)
            floor_ms = _ms(start)
    n = args.cases * args.samples
    print(f"run of {n:,} samples; target < {TARGET_MS:.0f} ms per search")
    print(f"index at finish (already built: catch-up only): {index_ms:8.1f} ms")
    print(f"first search after the run finished: {first_ms:8.1f} ms  ({len(first)} hits)")
    for q in QUERIES:
        median = statistics.median(timings[q])
        verdict = "met" if median < TARGET_MS else "MISSED"
        print(f"{q!r:28} {median:8.1f} ms  {found[q]:5d} hits  {verdict}")
    print(f"floor: read every output and scan in Python: {floor_ms:8.1f} ms ({scanned} hits)")


if __name__ == "__main__":
    main()
