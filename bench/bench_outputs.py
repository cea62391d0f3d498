"""Step 2 on a 1 MB output: open the Outputs screen, wrapped, with its diff to the golden.

One case whose 5 samples are each a 1 MB output (prose with some long lines, and one
1 MB line without a space), with a golden answer to diff against. Measured: opening
Outputs on it (store read, escaping, the diff with changed words, wrapping to the pane,
first paint), moving to the next sample, and toggling wrapping. Target: open < 0.3 s.

    uv run python bench/bench_outputs.py [--size 1000000] [--openings 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from redline.deciding.baseline import Baseline, BaselineCase, Golden  # noqa: E402
from redline.running.store import RunStore  # noqa: E402
from redline.vocabulary.records import CaseOutcome  # noqa: E402
from redline.vocabulary.verdicts import Verdict  # noqa: E402
from redline_tui.app import TriageApp  # noqa: E402
from redline_tui.context import TriageContext  # noqa: E402
from redline_tui.screens.outputs import OutputsScreen  # noqa: E402
from redline_tui.widgets.lazy_text import LazyText  # noqa: E402
from runfactory import CaseSpec, RunSpec, write_run  # noqa: E402

_TARGET_S = 0.3
_SAMPLES = 5
_RUN = "0123456789ab"


def big_output(size: int, seed: int) -> str:
    """Prose paragraphs (each ~2 kB on one line, as models write them), then one long
    unbroken line: the two shapes that used to need sideways scrolling."""
    sentence = f"The invoice total is Rp {seed}2.500.000 and it was paid on time. "
    paragraph = sentence * 30
    prose = "\n\n".join(paragraph for _ in range(size // 2 // len(paragraph)))
    return prose + "\n" + "x" * (size - len(prose) - 1)


def build(path: Path, root: Path, size: int) -> None:
    with RunStore.open(path) as store:
        case = CaseSpec(
            "big",
            [Verdict.WRONG] * _SAMPLES,
            suite="bench",
            required=_SAMPLES - 1,
            case_hash="h",
            outputs=[big_output(size, i) for i in range(_SAMPLES)],
            assertions=[()] * _SAMPLES,
        )
        write_run(
            store,
            RunSpec(
                _RUN,
                [case],
                started_at="2026-11-30T02:00:00.000+00:00",
                finished_at="2026-11-30T03:00:00.000+00:00",
                model_id="openai:bench",
                model_alias="bench",
            ),
        )
    golden = BaselineCase(
        case_id="big",
        run_id="earlier00000",
        tier="quality",
        samples=_SAMPLES,
        passes=_SAMPLES,
        required=_SAMPLES - 1,
        result=CaseOutcome.PASS,
        model_id="openai:bench",
        case_hash="h",
        golden=Golden(0, big_output(size, 9)),
    )
    (root / "baselines").mkdir()
    (root / "baselines" / "bench.json").write_text(
        Baseline("bench", {"big": golden}).to_json(), encoding="utf-8"
    )


async def _until(condition: object) -> None:
    while not condition():  # type: ignore[operator]
        await asyncio.sleep(0.001)


Timing = tuple[float, float]


async def measure(path: Path, root: Path, openings: int) -> dict[str, list[Timing]]:
    """(wall, CPU) seconds per step; CPU is this process's, all threads: on a loaded
    machine it says what the work costs, while wall time also counts waiting for a core."""
    times: dict[str, list[Timing]] = {"open": [], "next sample": [], "wrap off": []}
    with RunStore.open(path) as store:
        app = TriageApp(TriageContext(store=store, root=root))
        async with app.run_test(size=(140, 40)) as pilot:
            await _until(lambda: getattr(app.screen, "shown", None))
            await pilot.pause()
            for _ in range(openings):
                started, cpu = time.perf_counter(), time.process_time()
                await pilot.press("2")
                await _until(
                    lambda: (
                        isinstance(app.screen, OutputsScreen)
                        and app.screen.samples
                        and app.screen.query_one("#golden-diff", LazyText).row_count > 1
                    )
                )
                await pilot.pause()
                times["open"].append(_since(started, cpu))
                raw = app.screen.query_one("#raw-output", LazyText)
                assert raw.wrap and raw.virtual_size.width <= raw.size.width
                started, cpu = time.perf_counter(), time.process_time()
                await pilot.press("j")
                await pilot.pause()
                times["next sample"].append(_since(started, cpu))
                started, cpu = time.perf_counter(), time.process_time()
                await pilot.press("w")
                await pilot.pause()
                times["wrap off"].append(_since(started, cpu))
                await pilot.press("escape")
                await pilot.pause()
    return times


def _since(wall: float, cpu: float) -> Timing:
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--openings", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root / "redline.db", root, args.size)
        times = asyncio.run(measure(root / "redline.db", root, args.openings))
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{_SAMPLES} samples of {args.size / 1e6:.1f} MB each, golden of the same size")
    for name, values in times.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        target = (
            f"  (target {_TARGET_S * 1000:.0f} ms: wall {wall / _TARGET_S:.2f}×, "
            f"CPU {cpu / _TARGET_S:.2f}×)"
        )
        print(
            f"{name:<12} median of {len(values)}: {wall * 1000:6.0f} ms wall "
            f"{cpu * 1000:6.0f} ms CPU" + (target if name == "open" else "")
        )


if __name__ == "__main__":
    main()
