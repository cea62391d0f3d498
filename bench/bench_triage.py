"""Triage app speed on a big red run: first full paint of the Run screen, opening Outputs.

A store whose red run has 1,000 cases × 20 samples (plus four earlier nightly runs for
the history column). Targets on this machine: Run screen < 1 s, Outputs < 150 ms.

    uv run python bench/bench_triage.py [--cases 1000] [--samples 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from redline.running.store import RunStore  # noqa: E402
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict  # noqa: E402
from redline_tui.app import TriageApp  # noqa: E402
from redline_tui.context import TriageContext  # noqa: E402
from redline_tui.screens.outputs import OutputsScreen  # noqa: E402
from redline_tui.screens.run import RunScreen  # noqa: E402
from runfactory import CaseSpec, RunSpec, write_run  # noqa: E402

_EARLIER_RUNS = 4
_OPENINGS = 5


def build(path: Path, n_cases: int, n_samples: int) -> str:
    store = RunStore.open(path)
    red = ""
    for r in range(_EARLIER_RUNS + 1):
        run_id = f"{r:012x}"
        red = run_id
        specs = []
        for c in range(n_cases):
            failing = r == _EARLIER_RUNS and c % 7 == 0
            verdicts = [
                Verdict.WRONG if failing and i % 3 == 0 else Verdict.OK for i in range(n_samples)
            ]
            specs.append(
                CaseSpec(
                    f"case-{c:04d}",
                    verdicts,
                    suite="bench",
                    required=n_samples - 1,
                    case_hash="h",
                    outputs=[f"answer {c}/{i}\n" * 20 for i in range(n_samples)],
                    assertions=[_checked(v) for v in verdicts],
                )
            )
        write_run(
            store,
            RunSpec(
                run_id,
                specs,
                started_at=f"2026-11-{10 + r:02d}T02:00:00.000+00:00",
                finished_at="2026-11-30T03:00:00.000+00:00",
                model_id="openai:bench",
                model_alias="bench",
            ),
        )
    store.close()
    return red


def _checked(verdict: Verdict) -> tuple[AssertionResult, ...]:
    status = AssertionStatus.PASSED if verdict is Verdict.OK else AssertionStatus.FAILED
    return (AssertionResult(0, "contains", status, "checked"),)


Timing = tuple[float, float]


async def measure(path: Path, root: Path, n_cases: int) -> tuple[Timing, float, list[Timing]]:
    """(wall, CPU) seconds of the first paint and of each Outputs opening; marks wall time.

    CPU time is this process's, all threads: on a shared, loaded machine it says what the
    work costs, while wall time also counts waiting for a core.
    """
    with RunStore.open(path) as store:
        app = TriageApp(TriageContext(store=store, root=root))
        started = time.perf_counter()
        cpu = time.process_time()
        async with app.run_test(size=(120, 40)) as pilot:
            while not (
                isinstance(app.screen, RunScreen)
                and app.screen.run is not None
                and len(app.screen.shown) == n_cases
            ):
                await asyncio.sleep(0.001)
            await pilot.pause()
            first_paint = (time.perf_counter() - started, time.process_time() - cpu)
            home = app.screen
            while len(home.marks) < n_cases:
                await asyncio.sleep(0.005)
            marks = time.perf_counter() - started
            openings = []
            for _ in range(_OPENINGS):
                opened = time.perf_counter()
                cpu = time.process_time()
                await pilot.press("2")
                while not (isinstance(app.screen, OutputsScreen) and app.screen.samples):
                    await asyncio.sleep(0.001)
                await pilot.pause()
                openings.append((time.perf_counter() - opened, time.process_time() - cpu))
                await pilot.press("escape", "down")
                await pilot.pause()
    return first_paint, marks, openings


def import_time() -> float:
    code = (
        "import time; t = time.perf_counter(); import redline_tui.app; "
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return float(out.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "redline.db"
        t = time.perf_counter()
        build(path, args.cases, args.samples)
        print(
            f"store: {_EARLIER_RUNS + 1} runs × {args.cases} cases × {args.samples} samples "
            f"built in {time.perf_counter() - t:.1f} s"
        )
        first_paint, marks, openings = asyncio.run(measure(path, Path(tmp), args.cases))
    imports = import_time()
    wall = statistics.median(o[0] for o in openings)
    cpu = statistics.median(o[1] for o in openings)
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"import redline_tui.app:           {imports * 1000:6.0f} ms wall (once per process)")
    print(
        f"Run screen first full paint:      {first_paint[0] * 1000:6.0f} ms wall "
        f"{first_paint[1] * 1000:6.0f} ms CPU  (target 1000 ms: wall "
        f"{first_paint[0] / 1.0:.2f}×, CPU {first_paint[1] / 1.0:.2f}×)"
    )
    print(f"history and marks columns filled: {marks * 1000:6.0f} ms wall (worker, after paint)")
    print(
        f"open a case's Outputs (median/{len(openings)}): {wall * 1000:6.0f} ms wall "
        f"{cpu * 1000:6.0f} ms CPU  (target 150 ms: wall {wall / 0.150:.2f}×, "
        f"CPU {cpu / 0.150:.2f}×)"
    )


if __name__ == "__main__":
    main()
