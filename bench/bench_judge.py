"""Judge throughput: 800 judge calls at concurrency 16 against a 50 ms loopback server.

Each call goes through the whole Layer 2 path a `--judge` run takes per sample:
`judge_pending` builds the rubric prompt and answer schema, posts a structured-output
request, validates the answer with pydantic and decides the verdict again. The ideal
wall time is ceil(800 / 16) x 50 ms = 2.5 s; everything above it is redline. The server
runs in its own process so its CPU is not counted. Targets: wall <= 1.2 x ideal on an
idle machine, and <= 1 ms CPU per judgement above a bare aiohttp client posting the same
body (measured alongside, as the floor).

    uv run python bench/bench_judge.py [--calls 800] [--concurrency 16]
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

from loopback import LATENCY_MS, bare_client, start_server
from redline.assertions import evaluate_sample
from redline.assertions.judge import judge_assertions
from redline.config import parse_config
from redline.judge.call import judge_request
from redline.providers.openai import OpenAIProvider
from redline.running.judging import JudgeSession, judge_pending
from redline.suite.cases import Case, load_suite
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import AssertionStatus

KEY_ENV = "REDLINE_BENCH_KEY"
ANSWER = '{"score": 2, "reasoning": "one generic transition, otherwise dense", "is_concise": true}'

_RUBRIC = """\
name: slop
description: Filler, generic transitions and marketing language.
anchors:
  1: Straight to the point.
  3: One or two generic transitions.
  5: Full of filler.
pass:
  max_score: 2
checks:
  is_concise: Is it concise?
model: fake
min_kappa: 0.6
prompt: "MODE:echo {{output}}"
"""
_CASE = """\
id: case-0001
provenance: {ticket: BENCH-1, reported: 2026-01-01, note: judge benchmark}
vars:
  q: Explain idempotency.
assert:
  - type: contains
    value: score
  - type: max-chars
    value: 2000
  - type: judge
    rubric: rubrics/slop.yaml
"""


def _write_project(root: Path, url: str) -> Path:
    (root / "redline.toml").write_text(
        '[models]\nfake = "loopback:fake-model-2025-01-01"\n'
        f'[providers.loopback]\ntype = "openai"\nbase_url = "{url}/v1"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 10\n',
        encoding="utf-8",
    )
    suite = root / "bench"
    (suite / "rubrics").mkdir(parents=True)
    (suite / "system.txt").write_text("Explain.\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: bench\nprompt:\n  system: system.txt\n  user: '{{q}}'\nmodel: fake\n",
        encoding="utf-8",
    )
    (suite / "rubrics" / "slop.yaml").write_text(_RUBRIC, encoding="utf-8")
    (suite / "case-0001.yaml").write_text(_CASE, encoding="utf-8")
    return suite


async def _judge_all(
    session: JudgeSession, case: Case, calls: int, concurrency: int
) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, judged samples) for `calls` judge calls."""
    limit = asyncio.Semaphore(concurrency)
    completions = [
        Completion(text=f"{ANSWER} ", finish_reason=FinishReason.STOP) for _ in range(calls)
    ]

    async def one(seed: int, completion: Completion) -> bool:
        async with limit:
            evaluation = evaluate_sample(case, completion)
            judged = await judge_pending(session, case, completion, evaluation, seed=seed)
            return any(
                r.type == "judge" and r.status is AssertionStatus.PASSED for r in judged.results
            )

    await one(-1, completions[0])
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    passed = await asyncio.gather(*(one(i, c) for i, c in enumerate(completions)))
    wall = time.perf_counter() - wall0
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage1.ru_utime - usage0.ru_utime + usage1.ru_stime - usage0.ru_stime
    return wall, cpu, sum(passed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ[KEY_ENV] = "bench-key"
    server, url = start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="redline-bench-judge-") as tmp:
            config = parse_config(_write_project(Path(tmp), url).parent / "redline.toml")
            suite = load_suite(Path(tmp) / "bench", config)
            case = suite.cases[0]

            async def measure(calls: int, concurrency: int) -> tuple[float, float, int]:
                session = JudgeSession.open([suite], config, blocks=False)
                try:
                    return await _judge_all(session, case, calls, concurrency)
                finally:
                    await session.aclose()

            serial_calls = max(1, args.calls // 20)
            wall1, _, _ = asyncio.run(measure(serial_calls, 1))
            wall, cpu, judged = asyncio.run(measure(args.calls, args.concurrency))
            judge = next(iter(judge_assertions(case.assertions)))
            model = config.model("fake")
            request = judge_request(judge.rubric, model, ANSWER, case.vars)
            body = OpenAIProvider(
                model, config.provider("loopback"), base_url=url, api_key=None, price=None
            ).payload(request)
            floor = asyncio.run(bare_client(url, body, args.calls, args.concurrency))
    finally:
        server.terminate()
        server.wait(timeout=10)
    ideal = math.ceil(args.calls / args.concurrency) * LATENCY_MS / 1000
    rate = args.calls / wall
    serial_rate = serial_calls / wall1
    print(f"judge calls            {args.calls} at concurrency {args.concurrency}")
    print(f"judged as passing      {judged}/{args.calls}")
    print(f"wall                   {wall:.2f} s (ideal {ideal:.2f} s, ratio {wall / ideal:.2f})")
    print(f"throughput             {rate:.0f} judgements/s")
    print(f"serial (concurrency 1) {serial_rate:.1f} judgements/s over {serial_calls} calls")
    print(f"speed-up vs serial     {rate / serial_rate:.1f}x (ideal {args.concurrency}x)")
    print(f"CPU per judgement      {cpu / args.calls * 1000:.2f} ms")
    floor_ms = floor.cpu_per_request_s * 1000
    print(f"  of which HTTP        {floor_ms:.2f} ms per request (bare aiohttp client, same load)")
    print(f"  judge path + rest    {cpu / args.calls * 1000 - floor_ms:.2f} ms")


if __name__ == "__main__":
    main()
