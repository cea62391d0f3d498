"""Benchmark: a python target's per-sample overhead in the worker pool, and a table import.

1. The same function called directly and through the worker pool (`PythonTarget`, which a
   run uses): per-sample time of each, the overhead, and their ratio, for a function that
   returns at once and for one that works 5 ms (an app's own code), one sample at a time.
2. `redline cases import` of 1,000 CSV rows into a suite (every row validated by the suite
   loader, then written).

    uv run python bench/bench_targets.py [--samples 300] [--rows 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from redline.intake.casefile import row_cases, write_cases
from redline.targets.python_target import PythonTarget
from redline.targets.spec import TargetKind, TargetSpec
from redline.vocabulary.completion import ChatRequest

APP = """
import time

def instant(case):
    return "ok " + case["vars"]["q"]

def works(case):
    end = time.perf_counter() + 0.005
    while time.perf_counter() < end:
        pass
    return {"text": "ok " + case["vars"]["q"], "usage": {"input_tokens": 3, "output_tokens": 2}}
"""


def _request(i: int) -> ChatRequest:
    return ChatRequest(model="", system="", user="q", sample=("s", "c", i), vars={"q": str(i)})


def overhead(root: Path, name: str, samples: int) -> tuple[float, float]:
    """(direct µs per sample, pool µs per sample), medians, one sample at a time, the two
    calls alternating so that a busy machine slows both alike."""
    sys.path.insert(0, str(root))
    import benchapp  # type: ignore[import-not-found]

    function = getattr(benchapp, name)
    from redline.targets.answer import case_payload, read_answer

    spec = TargetSpec(kind=TargetKind.PYTHON, ref=f"benchapp:{name}", root=root)
    target = PythonTarget(spec, None, workers=1)

    async def both() -> tuple[float, float]:
        await target.complete(_request(-1))  # the worker starts and imports the app once
        direct, pooled = [], []
        for i in range(samples):
            t = time.perf_counter()
            read_answer(function(case_payload(_request(i), None)), latency_ms=0.0, model="")
            direct.append(time.perf_counter() - t)
            t = time.perf_counter()
            answer = await target.complete(_request(i))
            pooled.append(time.perf_counter() - t)
            assert answer.ok, answer.error
        await target.aclose()
        return statistics.median(direct) * 1e6, statistics.median(pooled) * 1e6

    return asyncio.run(both())


def import_rows(root: Path, rows: int) -> float:
    suite = root / "cases" / "imported"
    suite.mkdir(parents=True)
    (suite / "system.txt").write_text("Answer the customer.", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: imported\nprompt: {system: system.txt, user: '{{question}}'}\nmodel: local\n",
        encoding="utf-8",
    )
    table = [
        {"ticket": f"T-{i}", "question": f"Where is order {i}?", "answer": f"Order {i} ships."}
        for i in range(rows)
    ]
    mapping = {"id": "ticket", "vars.question": "question", "golden": "answer"}
    started = time.perf_counter()
    cases, refused = row_cases(table, mapping, "data.csv")
    written = write_cases(suite, cases, None)
    elapsed = time.perf_counter() - started
    assert not refused and not written.refused and len(written.paths) == rows
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "benchapp.py").write_text(APP, encoding="utf-8")
        print(f"python target, {args.samples} samples one at a time (1 worker), medians:")
        for name, what in (("instant", "returns at once"), ("works", "works 5 ms")):
            direct, pooled = overhead(root, name, args.samples)
            print(
                f"  {what:16} direct {direct:9.1f} µs/sample   pool {pooled:9.1f} µs/sample   "
                f"overhead {pooled - direct:8.1f} µs   ratio pool/direct {pooled / direct:7.2f}x"
            )
        elapsed = import_rows(root, args.rows)
        print(
            f"cases import: {args.rows} CSV rows validated and written in {elapsed:.2f} s "
            f"({args.rows / elapsed:.0f} rows/s)"
        )


if __name__ == "__main__":
    main()
