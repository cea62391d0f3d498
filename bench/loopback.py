"""What the HTTP benchmarks share: the loopback server in its own process, and httpx's floor."""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LATENCY_MS = 50.0


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


async def bare_http_cpu(url: str, body: dict[str, object], total: int, concurrency: int) -> float:
    """CPU seconds per request of httpx alone (same body, server, concurrency): the floor."""
    import httpx

    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(trust_env=False) as client:

        async def one() -> None:
            async with limit:
                response = await client.post(f"{url}/v1/chat/completions", json=body)
                response.json()

        await one()
        before = resource.getrusage(resource.RUSAGE_SELF)
        await asyncio.gather(*(one() for _ in range(total)))
        after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / total
