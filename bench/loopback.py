"""What the HTTP benchmarks share: the loopback server in its own process, and the floor:
a bare aiohttp client posting the same requests."""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LATENCY_MS = 50.0

#: What the bare client posts: a request like the runner benchmark's (MODE:json answers).
BARE_BODY: dict[str, object] = {
    "model": "fake-model-2025-01-01",
    "messages": [
        {"role": "system", "content": "Extract the invoice as JSON."},
        {"role": "user", "content": "MODE:json Invoice 1 from PT Sinar Jaya"},
    ],
    "seed": 1,
}


def start_server(latency_ms: float = LATENCY_MS) -> tuple[subprocess.Popen[str], str]:
    """tests/servers.py in a child process (so its CPU is not ours); returns it and its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "servers.py"), "--latency-ms", str(latency_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"loopback server did not start: {url!r}")
    return proc, url


@dataclass(frozen=True)
class Floor:
    """What a bare aiohttp client needs for the same requests: the floor redline is held to."""

    wall_s: float
    cpu_s: float
    requests: int

    @property
    def cpu_per_request_s(self) -> float:
        return self.cpu_s / self.requests


async def bare_client(url: str, body: dict[str, object], total: int, concurrency: int) -> Floor:
    """`total` POSTs of `body` to the Chat Completions path, `concurrency` at a time, each
    answer read and parsed; one warm-up request first. Raises if any answer is not 200."""
    import aiohttp

    limit = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one() -> None:
            async with limit, session.post(f"{url}/v1/chat/completions", json=body) as answer:
                json.loads(await answer.read())
                if answer.status != 200:
                    raise SystemExit(f"bare client: HTTP {answer.status}")

        await one()
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Floor(wall, cpu, total)
