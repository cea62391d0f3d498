"""Runner overhead: 200 cases x 5 samples at concurrency 16 against a 50 ms loopback server.

The ideal wall time is ceil(1000 / 16) x 50 ms = 3.15 s; everything above it is redline
(request building, httpx, assertions, the SQLite commits of the samples). The server runs
in its own process so its CPU is not counted. Targets: wall <= 1.2 x ideal and <= 1.0 ms
CPU per sample (issue 14). On a shared machine compare the CPU ratio to the bare client
measured in the same run, not wall times.

    uv run python bench/bench_runner.py [--cases 200] [--samples 5] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import tempfile
import time
from pathlib import Path

from loopback import BARE_BODY, LATENCY_MS, bare_client, start_server
from redline.config import parse_config
from redline.running.runner import RunOptions, run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites

KEY_ENV = "REDLINE_BENCH_KEY"

_CASE = """id: case-{n:04d}
provenance: {{ticket: BENCH-{n}, reported: 2026-01-01, note: runner benchmark}}
vars:
  doc: 'Invoice {n} from PT Sinar Jaya, total Rp 12.500.000,-'
assert:
  - type: is-json
  - type: contains
    value: '"total_idr": 12500000'
  - type: not-contains
    value: Here is
  - type: max-chars
    value: 2000
  - type: compression-ratio
    value: 0.35
  - type: distinct-n
    value: 0.5
"""


def write_project(root: Path, url: str, cases: int, samples: int, concurrency: int) -> Path:
    (root / "redline.toml").write_text(
        f"concurrency = {concurrency}\n"
        '[models]\nfake = "loopback:fake-model-2025-01-01"\n'
        f'[providers.loopback]\ntype = "openai"\nbase_url = "{url}/v1"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 10\n',
        encoding="utf-8",
    )
    suite = root / "bench"
    suite.mkdir()
    (suite / "system.txt").write_text("Extract the invoice as JSON.\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: bench\nprompt:\n  system: system.txt\n  user: 'MODE:json {{doc}}'\n"
        f"model: fake\nsamples: {samples}\ntier: quality\n",
        encoding="utf-8",
    )
    for n in range(cases):
        (suite / f"case-{n:04d}.yaml").write_text(_CASE.format(n=n), encoding="utf-8")
    return suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile dump of the run")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "bench-key"
    server, url = start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="redline-bench-") as tmp:
            root = Path(tmp)
            suite_dir = write_project(root, url, args.cases, args.samples, args.concurrency)
            config = parse_config(root / "redline.toml")
            suites = load_suites([suite_dir], config)
            store = RunStore.open(config.store_path)
            total = args.cases * args.samples
            ideal = math.ceil(total / args.concurrency) * LATENCY_MS / 1000
            profiler = None
            if args.profile:
                import cProfile

                profiler = cProfile.Profile(time.process_time)
                profiler.enable()
            usage0 = resource.getrusage(resource.RUSAGE_SELF)
            wall0 = time.perf_counter()
            record = run_suites(suites, config, store, RunOptions())
            wall = time.perf_counter() - wall0
            usage1 = resource.getrusage(resource.RUSAGE_SELF)
            user = usage1.ru_utime - usage0.ru_utime
            system = usage1.ru_stime - usage0.ru_stime
            cpu = user + system
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(args.profile)
            stored = len(store.sample_keys(record.id))
            store.close()

        bare = asyncio.run(bare_client(url, BARE_BODY, total, args.concurrency))
    finally:
        server.terminate()
        server.wait(timeout=10)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"samples stored     {stored} of {total} (run {record.id}, {record.result})")
    print(f"wall               {wall:.2f} s (ideal {ideal:.2f} s)")
    print(f"wall / ideal       {wall / ideal:.2f}  (target <= 1.20)")
    print(
        f"CPU per sample     {cpu / total * 1000:.2f} ms  (target <= 1.00; "
        f"user {user / total * 1000:.2f} + system {system / total * 1000:.2f})"
    )
    print(f"  bare client      {bare.cpu_per_request_s * 1000:.2f} ms per request (aiohttp)")
    print(f"CPU / bare client  {cpu / total / bare.cpu_per_request_s:.2f}")
    print(f"wall / bare        {wall / bare.wall_s:.2f}  (bare client {bare.wall_s:.2f} s)")
    print(f"peak RSS           {peak_mb:.0f} MB")
    if stored != total:
        raise SystemExit("not every sample was stored")


if __name__ == "__main__":
    main()
