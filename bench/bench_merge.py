"""Benchmark: `redline merge --import` of a CI matrix's shard exports, then `show` and the app.

A generated night: N shard exports (`--shard K/N`), each C cases × S samples with one
assertion result per sample and a manifest entry per case file (defaults: 50 shards ×
2,000 cases × 5 samples = 500,000 samples). Each command runs in its own process, as a
user runs it; the figures are its wall time, CPU time and peak RSS. Targets: merge + import
≤ 30 s and ≤ 500 MB; `show` of the merged run, the app's first paint (the Run screen
with its counts and the first failing case), and in the app End, PageUp, PageDown, sort,
filter and the first search of the merged run (its index not built: import defers it)
each ≤ 1 s from the key to the painted screen; `redline search`'s first search ≤ 1 s.

    uv run python bench/bench_merge.py [--shards 50] [--cases 2000] [--samples 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from redline.running.exchange import RESULTS_FILE, SAMPLES_FILE, export_run  # noqa: E402
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict  # noqa: E402
from runfactory import CaseSpec, RunSpec, open_store, write_run  # noqa: E402

_MARK = "SHARDMARK"


def _template(work: Path, cases: int, samples: int) -> tuple[str, str]:
    """One shard's export as text, its case ids and run id carrying a mark to replace."""
    specs = []
    for c in range(cases):
        failing = c % 97 == 0
        verdicts = [Verdict.WRONG if failing and i % 2 else Verdict.OK for i in range(samples)]
        specs.append(
            CaseSpec(
                f"{_MARK}-{c:05d}",
                verdicts,
                suite="nightly",
                case_hash=f"h{c}",
                outputs=[
                    f"The refund for order {c} is on its way ({i}).\n" * 3 for i in range(samples)
                ],
                assertions=[
                    (
                        AssertionResult(
                            0,
                            "contains",
                            AssertionStatus.PASSED if v is Verdict.OK else AssertionStatus.FAILED,
                            "found 'refund'" if v is Verdict.OK else "'refund' not found",
                        ),
                    )
                    for v in verdicts
                ],
                input_tokens=420,
                output_tokens=30,
            )
        )
    manifest = {"nightly/suite.yaml": "s1", "nightly/prompts/system.txt": "p1"}
    manifest |= {f"nightly/cases/{_MARK}-{c:05d}.yaml": f"f{c}" for c in range(cases)}
    spec = RunSpec(
        f"{_MARK}", specs, model_id="openai:gpt-bench", manifest=manifest, args={"shard": [0, 0]}
    )
    with open_store(work) as store:
        write_run(store, spec)
        export_run(store, spec.run_id, work / "template")
    return (
        (work / "template" / RESULTS_FILE).read_text(encoding="utf-8"),
        (work / "template" / SAMPLES_FILE).read_text(encoding="utf-8"),
    )


def generate(work: Path, shards: int, cases: int, samples: int) -> list[Path]:
    results, lines = _template(work, cases, samples)
    folders = []
    for k in range(1, shards + 1):
        mark = f"s{k:03d}"
        data = json.loads(results.replace(_MARK, mark))
        data["run"]["id"] = f"{0xA0000000000 + k:012x}"
        data["run"]["args"] = {"shard": [k, shards], "tier": "quality"}
        folder = work / "exports" / f"shard-{k}"
        folder.mkdir(parents=True)
        (folder / RESULTS_FILE).write_text(json.dumps(data, indent=2), encoding="utf-8")
        (folder / SAMPLES_FILE).write_text(lines.replace(_MARK, mark), encoding="utf-8")
        folders.append(folder)
    return folders


def timed(argv: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MB, stdout) of one command in its own process.

    On a shared, loaded machine CPU time says what the work costs; wall time also counts
    waiting for a core."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} failed:\n{err.read().decode()}")
        cpu = usage.ru_utime + usage.ru_stime
        return wall, cpu, usage.ru_maxrss / 1024, out.read().decode()


_APP = """
import asyncio, json, re, sys, time
from pathlib import Path
started = time.perf_counter()
from textual import events
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.run import RunScreen
from redline_tui.screens.search import SearchScreen

async def painted(screen):
    done = asyncio.get_running_loop().create_future()
    screen.call_after_refresh(lambda: done.set_result(time.perf_counter()))
    return await done

async def until(pilot, condition):
    while not condition():
        await asyncio.sleep(0.001)

def drawn(table):
    lines = (table.render_line(y).text for y in range(1, table.size.height))
    return [m.group(0) for line in lines if (m := re.search(r"nightly/s\\d+-\\d+", line))]

async def main():
    figures = {}
    with RunStore.open(Path(sys.argv[1])) as store:
        app = TriageApp(TriageContext(store=store, root=Path(sys.argv[2])))
        opened = time.perf_counter()
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, RunScreen)
                        and app.screen.run is not None and app.screen.shown)
            screen = app.screen
            table = screen.table
            figures["paint"] = await painted(screen) - opened
            figures["paint_with_imports"] = figures["paint"] + opened - started
            first = screen.shown[0]
            assert first.result is CaseOutcome.FAIL, first
            assert table.get_row_at(0)[2].plain == f"{first.suite}/{first.case_id}"
            figures["cases"] = table.row_count

            def press(key, character=None):
                # As a terminal sends it: Pilot's press also waits for the process to
                # go idle, which it does not while the app indexes the run.
                app.post_message(events.Key(key, character))

            async def timed(name, key, condition, character=None):
                at = time.perf_counter()
                press(key, character)
                await until(pilot, condition)
                figures[name] = await painted(screen) - at

            await timed("end", "end", lambda: table.cursor_row == table.row_count - 1)
            last = table.selected_case()
            assert drawn(table)[-1] == f"{last.suite}/{last.case_id}", drawn(table)[-3:]
            figures["held_after_end"] = table.held_rows
            row = table.cursor_row
            await timed("pageup", "pageup", lambda: table.cursor_row < row)
            for _ in range(40):  # into rows never read
                row = table.cursor_row
                press("pageup")
                await until(pilot, lambda: table.cursor_row < row)
            row = table.cursor_row
            await timed("pagedown", "pagedown", lambda: table.cursor_row > row)
            await pilot.press("home")
            await timed("sort", "s", lambda: screen.sort_column == "case", "s")
            await pilot.press("slash")
            box = screen.filter_box
            at = time.perf_counter()
            box.value = "v:wrong"
            await until(pilot, lambda: table.row_count < figures["cases"])
            figures["filter"] = await painted(screen) - at
            figures["filtered"] = table.row_count
            await pilot.press("escape", "escape")
            await pilot.press("F")
            await until(pilot, lambda: isinstance(app.screen, SearchScreen))
            search = app.screen
            await pilot.press(*sys.argv[3])
            at = time.perf_counter()
            press("enter", "\\r")
            await until(pilot, lambda: bool(search.hits))
            figures["search"] = await painted(search) - at
            figures["hits"] = len(search.hits)
    print(json.dumps(figures))

asyncio.run(main())
"""

_INDEX = """
import sys
from pathlib import Path
from redline.running.store import RunStore
with RunStore.open(Path(sys.argv[1])) as store:
    assert store.index_for_search(sys.argv[2])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--cases", type=int, default=2000, help="cases per shard")
    parser.add_argument("--samples", type=int, default=5, help="samples per case")
    args = parser.parse_args()
    redline = [sys.executable, "-m", "redline"]
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        folders = generate(work, args.shards, args.cases, args.samples)
        size = sum(f.stat().st_size for d in folders for f in d.iterdir()) / 1e6
        total = args.shards * args.cases * args.samples
        print(
            f"generated {args.shards} shard exports, {args.shards * args.cases:,} cases, "
            f"{total:,} samples, {size:.0f} MB in {time.perf_counter() - started:.1f} s"
        )
        (work / "redline.toml").write_text(
            'store = ".redline/redline.db"\n[models]\ndefault = "openai:gpt-bench"\n',
            encoding="utf-8",
        )
        wall, cpu, rss, out = timed([*redline, "merge", *map(str, folders), "--import"], work)
        said = out.strip().splitlines()[0]
        print(said)
        print(
            f"merge --import:    {wall:6.2f} s wall {cpu:6.2f} s CPU {rss:5.0f} MB peak RSS  "
            f"(target 30 s, 500 MB: wall {wall / 30:.2f}×, CPU {cpu / 30:.2f}×, {rss / 500:.2f}×)"
        )
        run_id = said.split(" into run ")[1].split(":")[0]
        wall, cpu, rss, _ = timed([*redline, "merge", *map(str, folders), "--out", "merged"], work)
        print(f"merge --out DIR:   {wall:6.2f} s wall {cpu:6.2f} s CPU {rss:5.0f} MB peak RSS")
        wall, cpu, rss, _ = timed([*redline, "show", run_id], work)
        print(
            f"show (merged run): {wall:6.2f} s wall {cpu:6.2f} s CPU {rss:5.0f} MB peak RSS  "
            f"(target 1 s: wall {wall:.2f}×, CPU {cpu:.2f}×)"
        )
        store = work / ".redline" / "redline.db"
        phrase = "order 1234 is"
        wall, cpu, rss, out = timed([*redline, "search", run_id, phrase], work)
        print(
            f"first search (CLI):{wall:6.2f} s wall {cpu:6.2f} s CPU {rss:5.0f} MB peak RSS, "
            f"index not built: {out.strip().splitlines()[-1]}  (target 1 s: wall {wall:.2f}×)"
        )
        copy = work / "indexed.db"
        shutil.copyfile(store, copy)
        wall, cpu, rss, _ = timed([sys.executable, "-c", _INDEX, str(copy), run_id], work)
        copy.unlink()
        print(
            f"search index, whole run: {wall:6.2f} s wall {cpu:6.2f} s CPU {rss:5.0f} MB peak "
            "RSS (what building it at import would add; the app builds it in the background)"
        )
        app = json.loads(
            subprocess.run(
                [sys.executable, "-c", _APP, str(store), tmp, phrase],
                cwd=work,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        print(
            f"app first paint:   {app['paint']:6.2f} s wall after start, "
            f"{app['paint_with_imports']:.2f} s with imports, first row failing  "
            f"(target 1 s: {app['paint']:.2f}×)"
        )
        for name, words in (
            ("end", "End (last case)"),
            ("pageup", "PageUp"),
            ("pagedown", "PageDown (unread)"),
            ("sort", "sort (s)"),
            ("filter", "filter v:wrong"),
            ("search", "first search"),
        ):
            print(
                f"app {words + ':':19}{app[name]:6.2f} s wall, key to painted  "
                f"(target 1 s: {app[name]:.2f}×)"
            )
        print(
            f"app holds {app['held_after_end']:,} of {app['cases']:,} rows after End; filter "
            f"shows {app['filtered']:,}; search found {app['hits']} samples"
        )
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
