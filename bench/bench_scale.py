"""Benchmark: a 100,000-case suite in a CI matrix — one shard's load, validate and run, and a
full `redline validate` with a cold and a warm parse cache.

The generated suite (one file per case, 3 assertions each; every tenth case reads a shared
fixture, every twentieth checks JSON against a shared schema) is written to a temp folder.
Each command runs in its own process, as a user runs it; the figures are wall time, CPU
time (with its worker processes') and peak RSS. Targets: shard 1/50 load + validate ≤ 5 s,
full validate ≤ 10 s, cold (no parse cache) and warm, in one process and in parallel.
`--before PYTHON` runs the same commands with another checkout's interpreter (e.g.
`/work/main/.venv/bin/python`) for the figures before this change, in the same run.

    uv run python bench/bench_scale.py [--cases 100000] [--shards 50] [--before PYTHON]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loopback import start_server

SUITE = """name: scale
prompt:
  system: prompts/system.txt
  user: "{{q}}"
model: fake
samples: 5
tier: quality
"""

CASE = """id: c{n:06d}
provenance: {{ticket: SUP-{n}, reported: 2026-01-02, note: generated case {n}}}
vars:
  q: "MODE:json order {n}"{fixture}
assert:
  - type: {first}
  - type: not-contains
    value: "Here is"
  - type: max-chars
    value: 400
"""


def generate(root: Path, cases: int, url: str) -> None:
    """The project: redline.toml on the loopback server and the suite of `cases` files."""
    suite = root / "cases" / "scale"
    (suite / "prompts").mkdir(parents=True)
    (suite / "fixtures").mkdir()
    (suite / "schemas").mkdir()
    (suite / "suite.yaml").write_text(SUITE, encoding="utf-8")
    (suite / "prompts" / "system.txt").write_text("Answer as JSON.\n", encoding="utf-8")
    (suite / "fixtures" / "policy.txt").write_text("Refunds within 30 days.\n", encoding="utf-8")
    (suite / "schemas" / "order.schema.json").write_text('{"type": "object"}\n', encoding="utf-8")
    for n in range(cases):
        fixture = "\n  policy: file://fixtures/policy.txt" if n % 10 == 0 else ""
        first = (
            "is-json\n    value: file://schemas/order.schema.json"
            if n % 20 == 0
            else "contains\n    value: order"
        )
        (suite / f"c{n:06d}.yaml").write_text(
            CASE.format(n=n, fixture=fixture, first=first), encoding="utf-8"
        )
    (root / "redline.toml").write_text(
        'suites = ["cases"]\nconcurrency = 16\n\n[models]\n'
        'fake = "loopback:fake-model-2025-01-01"\n\n[providers.loopback]\n'
        f'type = "openai"\nbase_url = "{url}/v1"\napi_key_env = "REDLINE_LOOPBACK_KEY"\n'
        "timeout_s = 10.0\nmax_retries = 2\n",
        encoding="utf-8",
    )


def timed(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of one command in its own process; exit
    codes 0 and 1 (a red run) count as done."""
    env = os.environ | {"REDLINE_LOOPBACK_KEY": "sk-bench"}
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            out.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed:\n{out.read().decode()[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _row(label: str, figures: tuple[float, float, float], target: str = "") -> None:
    wall, cpu, rss = figures
    print(f"{label:<44} {wall:7.2f} s wall {cpu:7.2f} s CPU {rss:7.0f} MB  {target}")


def measure(
    python: str, root: Path, shards: int, label: str, new: bool
) -> dict[str, tuple[float, float, float]]:
    """Each command's figures; `new`: this checkout (the parse cache, `validate --shard`)."""
    redline = [python, "-m", "redline"]
    cache = root / ".redline" / "parsed.db"
    figures: dict[str, tuple[float, float, float]] = {}
    print(f"-- {label} ({python})")
    shard = f"1/{shards}"
    validate = [*redline, "validate"]
    steps: list[tuple[str, list[str], str]] = [("validate (cold cache)", validate, "≤ 10 s")]
    if new:  # before: no cache, no --jobs, no validate --shard
        steps = [
            ("validate --jobs 1 (cold cache)", [*validate, "--jobs", "1"], "≤ 10 s"),
            ("validate (cold cache)", validate, "≤ 10 s, parallel (the default)"),
            ("validate --jobs 1 (warm cache)", [*validate, "--jobs", "1"], "≤ 10 s"),
            ("validate (warm cache)", validate, "≤ 10 s, parallel (the default)"),
            (f"validate --shard {shard}", [*validate, "--shard", shard], "≤ 5 s"),
        ]
    run = [*redline, "run", "--quiet", "--yes", "--shard", shard, "--out", "out"]
    steps.append((f"run --shard {shard} (5 ms latency)", run, ""))
    for name, argv, target in steps:
        if "cold" in name:
            cache.unlink(missing_ok=True)
        result = timed(argv, root)
        figures[name] = result
        _row(name, result, target)
        shutil.rmtree(root / "out", ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--before", metavar="PYTHON", help="another checkout's interpreter")
    args = parser.parse_args()
    server, url = start_server(latency_ms=5.0)
    try:
        with tempfile.TemporaryDirectory(prefix="redline-scale-") as tmp:
            root = Path(tmp)
            started = time.perf_counter()
            generate(root, args.cases, url)
            print(
                f"{args.cases:,} cases (3 assertions each) generated in "
                f"{time.perf_counter() - started:.1f} s; {os.cpu_count()} cores, "
                f"load {os.getloadavg()[0]:.1f}"
            )
            after = measure(sys.executable, root, args.shards, "after", new=True)
            if args.before:
                before = measure(args.before, root, args.shards, "before", new=False)
                print("-- after / before (wall, CPU, RSS)")
                for name, now in after.items():
                    if name in before:
                        then = before[name]
                        ratios = "  ".join(f"{a / b:5.2f}×" for a, b in zip(now, then, strict=True))
                        print(f"{name:<44} {ratios}")
    finally:
        server.kill()


if __name__ == "__main__":
    main()
