"""Riding a rate limit: adaptive concurrency against today's fixed one, in one run.

    uv run python bench/bench_ratelimit.py [--window-s 5] [--quick]

Each scenario starts a fresh loopback server (tests/ratelimit_server.py, its own process)
that enforces token buckets by requests and by tokens per window, continuously refilled
and reported in the real header formats (the window is scaled down from a minute so the
benchmark takes a minute or two), and runs the same suite twice through `run_suites`:
`adaptive_concurrency = false` (today: a fixed concurrency, 429s retried after
Retry-After) and the default (start at the same concurrency, pace by the headers, grow
while they show room).

  requests-bound (OpenAI headers)      throughput >= 95% of the limit, 429s <= 1%
  tokens-bound (Anthropic headers)     throughput >= 95% of the limit, 429s <= 1%
  generous limit                       adaptive wall <= 1.1 x fixed
  no rate-limit headers                adaptive wall <= 1.1 x fixed

Throughput is what the server admitted over what its limit allowed from the first
admitted request to the last (a full bucket at the start plus the refill over that
time); for a tokens limit it counts the tokens the server charged.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from redline.config import parse_config
from redline.running.runner import RunOptions, run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "REDLINE_BENCH_KEY"
CONCURRENCY = 16
LATENCY_MS = 50.0
#: Cases of the suite; each runs samples / _CASES samples.
_CASES = 20


@dataclass(frozen=True)
class Scenario:
    name: str
    api: str  # openai | anthropic
    samples: int
    requests: float
    tokens: float | None
    output_tokens: float | None = None
    headers: bool = True
    #: The limit the figure is about: "requests" or "tokens" (None: a speed comparison).
    binding: str | None = None


@dataclass(frozen=True)
class Outcome:
    wall_s: float
    ok: int
    samples: int
    answered: int
    throttled: int
    tokens: float
    most_in_flight: int
    note: str
    #: From the first admitted request to the last, at the server.
    served_s: float


def _server(s: Scenario, window_s: float) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        str(ROOT / "tests" / "ratelimit_server.py"),
        "--requests",
        str(s.requests),
        "--window-s",
        str(window_s),
        "--latency-ms",
        str(LATENCY_MS),
    ]
    if s.tokens is not None:
        command += ["--tokens", str(s.tokens)]
    if s.output_tokens is not None:
        command += ["--output-tokens", str(s.output_tokens)]
    if not s.headers:
        command.append("--no-headers")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"rate-limited server did not start: {url!r}")
    return proc, url


def _project(root: Path, s: Scenario, url: str, adaptive: bool) -> Path:
    base = f"{url}/v1" if s.api == "openai" else url
    (root / "redline.toml").write_text(
        f"concurrency = {CONCURRENCY}\n"
        '[models]\nfake = "limited:fake-model-2025-01-01"\n'
        f'[providers.limited]\ntype = "{s.api}"\nbase_url = "{base}"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 30\n'
        f"adaptive_concurrency = {'true' if adaptive else 'false'}\n",
        encoding="utf-8",
    )
    suite = root / "bench"
    suite.mkdir()
    (suite / "system.txt").write_text(
        "You are a support assistant. Answer briefly and politely.\n", encoding="utf-8"
    )
    (suite / "suite.yaml").write_text(
        "name: bench\nprompt:\n  system: system.txt\n  user: 'Customer message: {{msg}}'\n"
        f"model: fake\nsamples: {s.samples // _CASES}\ntier: quality\nmax_tokens: 40\n",
        encoding="utf-8",
    )
    message = "my parcel has not arrived and the tracking page shows nothing " * 2
    for n in range(_CASES):
        (suite / f"case-{n:05d}.yaml").write_text(
            f"id: case-{n:05d}\nprovenance: {{ticket: RL-{n}, reported: 2026-12-01, "
            "note: bench}\n"
            f"vars:\n  msg: 'order {n}: {message}'\n"
            "assert:\n  - type: contains\n    value: ok\n",
            encoding="utf-8",
        )
    return suite


def _stats(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/stats", timeout=10) as answer:
        stats: dict[str, float] = json.loads(answer.read())
        return stats


def _run(s: Scenario, window_s: float, adaptive: bool) -> Outcome:
    proc, url = _server(s, window_s)
    try:
        with tempfile.TemporaryDirectory(prefix="redline-rl-") as tmp:
            root = Path(tmp)
            suite_dir = _project(root, s, url, adaptive)
            config = parse_config(root / "redline.toml")
            suites = load_suites([suite_dir], config)
            store = RunStore.open(config.store_path)
            started = time.perf_counter()
            record = run_suites(suites, config, store, RunOptions())
            wall = time.perf_counter() - started
            samples = store.samples(record.id)
            ok = sum(1 for x in samples if x.error is None)
            stats = _stats(url)
            from redline.providers.ratelimit import rate_limit_note

            note = rate_limit_note(record.args.get("rate_limit")) or "(nothing to say)"
            store.close()
    finally:
        proc.kill()
        proc.wait()
    return Outcome(
        wall_s=wall,
        ok=ok,
        samples=len(samples),
        answered=int(stats["answered"]),
        throttled=int(stats["throttled"]),
        tokens=float(stats["tokens_charged"]),
        most_in_flight=int(stats["most_in_flight"]),
        note=note,
        served_s=float(stats["last_s"] or 0) - float(stats["first_s"] or 0),
    )


def _share_of_limit(s: Scenario, o: Outcome, window_s: float) -> float:
    """What the server admitted over what its binding limit allowed in the run's time."""
    if s.binding == "requests":
        capacity, used = s.requests, float(o.answered)
    else:
        capacity, used = s.tokens or 0.0, o.tokens
    allowed = capacity + capacity / window_s * o.served_s
    return used / allowed


def _line(label: str, o: Outcome, share: float | None) -> str:
    requests = o.answered + o.throttled
    rate429 = o.throttled / requests if requests else 0.0
    share_text = f"{share:6.1%} of limit" if share is not None else " " * 15
    return (
        f"  {label:<9} wall {o.wall_s:6.2f} s  ok {o.ok:>5}/{o.samples:<5} {share_text}  "
        f"429s {o.throttled:>5} ({rate429:5.1%} of {requests} requests)  "
        f"most in flight {o.most_in_flight:>3}\n            {o.note}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window-s", type=float, default=5.0, help="the limits' window")
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--only", metavar="WORD", help="only the scenarios whose name has it")
    args = parser.parse_args()
    os.environ[KEY_ENV] = "bench-key"
    w = args.window_s
    scale = 0.5 if args.quick else 1.0
    scenarios = [
        # 60 requests/s at 50 ms needs ~3 in flight; fixed 16 overshoots it.
        Scenario(
            "requests-bound (OpenAI)",
            "openai",
            int(900 * scale),
            60 * w,
            1e9,
            binding="requests",
        ),
        # ~64 input + 40 output tokens a request: 2,400 input tokens/s is ~37 requests/s.
        Scenario(
            "tokens-bound (Anthropic)",
            "anthropic",
            int(600 * scale),
            400 * w,
            2400 * w,
            1e9,
            binding="tokens",
        ),
        Scenario("generous limit", "openai", int(2000 * scale), 1e7, 1e10),
        Scenario("no rate-limit headers", "openai", int(2000 * scale), 1e7, 1e10, headers=False),
    ]
    print(
        f"bench_ratelimit: concurrency {CONCURRENCY} (fixed) vs adaptive from {CONCURRENCY}, "
        f"server latency {LATENCY_MS:g} ms, limits per {w:g} s window"
    )
    failed = False
    for s in scenarios:
        if args.only and args.only not in s.name:
            continue
        print(f"\n{s.name}: {s.samples} samples")
        fixed = _run(s, w, adaptive=False)
        adaptive = _run(s, w, adaptive=True)
        if s.binding is not None:
            fixed_share = _share_of_limit(s, fixed, w)
            share = _share_of_limit(s, adaptive, w)
            print(_line("fixed", fixed, fixed_share))
            print(_line("adaptive", adaptive, share))
            requests = adaptive.answered + adaptive.throttled
            rate429 = adaptive.throttled / requests if requests else 0.0
            met = share >= 0.95 and rate429 <= 0.01
            failed |= not met
            print(
                f"  adaptive: {share:.1%} of the {s.binding} limit (target >= 95%), "
                f"429s {rate429:.2%} (target <= 1%), wall {adaptive.wall_s / fixed.wall_s:.2f} x "
                f"fixed  {'MET' if met else 'NOT MET'}"
            )
        else:
            print(_line("fixed", fixed, None))
            print(_line("adaptive", adaptive, None))
            ratio = adaptive.wall_s / fixed.wall_s
            met = ratio <= 1.1
            failed |= not met
            verdict = "MET" if met else "NOT MET"
            print(f"  adaptive wall {ratio:.2f} x fixed (target <= 1.1)  {verdict}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
