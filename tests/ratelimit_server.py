"""A loopback LLM server that enforces a rate limit as the providers do: token buckets by
requests and by tokens, refilled continuously over a window, reported on every answer in
the real header formats, a 429 with Retry-After when a request does not fit. The figures
an answer carries are those of its admission.

    POST /v1/chat/completions   OpenAI: x-ratelimit-{limit,remaining,reset}-{requests,tokens}
                                (resets as durations: `1.5s`, `20ms`, `6m0s`), retry-after
                                and retry-after-ms on a 429
    POST /v1/messages           Anthropic: anthropic-ratelimit-{requests,input-tokens,
                                output-tokens,tokens}-{limit,remaining,reset} (resets as
                                RFC 3339 times), retry-after on a 429
    GET  /stats                 what it served: answers, 429s, most requests in flight

A request is admitted (or refused, at once) when it arrives, and charged then, as OpenAI
charges it: its prompt's characters / 4 as
input tokens plus its max_tokens as output tokens. Limits are per `window_s` (60 for
per-minute limits; a benchmark scales the window down). `headers=False` sends no
rate-limit headers (still enforcing); `garbled=True` sends nonsense in them.

Used in-process by tests (`with RateLimitedServer(...) as server`) and as its own process
by bench/bench_ratelimit.py (`python tests/ratelimit_server.py --requests 400 ...`: prints
its URL, serves until killed).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web


@dataclass
class Stats:
    answered: int = 0
    throttled: int = 0
    in_flight: int = 0
    most_in_flight: int = 0
    #: What the tokens limit was charged (OpenAI: input + max_tokens; Anthropic: input).
    tokens_charged: float = 0.0
    #: When the first and the last admitted request arrived (monotonic seconds).
    first_s: float | None = None
    last_s: float | None = None
    #: Every request as it arrived: (monotonic seconds, status, retry-after-ms sent).
    arrivals: list[tuple[float, int, float | None]] = field(default_factory=list)
    #: Admitted requests by model, and their input tokens plus max_tokens.
    answered_by_model: dict[str, int] = field(default_factory=dict)
    tokens_by_model: dict[str, float] = field(default_factory=dict)


class _Bucket:
    def __init__(self, capacity: float, window_s: float) -> None:
        self.capacity = capacity
        self.rate = capacity / window_s
        self.level = capacity
        self.stamp = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def short_s(self, amount: float) -> float:
        """Seconds until `amount` fits (0 when it does now)."""
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)

    def reset_s(self) -> float:
        """Seconds until full again."""
        return (self.capacity - self.level) / self.rate


def _duration(seconds: float) -> str:
    """A reset as OpenAI writes it: `20ms`, `1.5s`, `6m0s`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 60:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s"


def _moment(seconds: float) -> str:
    """A reset as Anthropic writes it: an RFC 3339 time (UTC, milliseconds)."""
    when = datetime.fromtimestamp(time.time() + seconds, UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class RateLimitedServer:
    """The server on 127.0.0.1 (a thread of its own when used in-process)."""

    def __init__(
        self,
        *,
        requests: float,
        tokens: float | None = None,
        output_tokens: float | None = None,
        window_s: float = 60.0,
        latency_ms: float = 20.0,
        headers: bool = True,
        garbled: bool = False,
        retry_after: bool = True,
        answer_tokens: int = 8,
    ) -> None:
        self.window_s = window_s
        self.latency_s = latency_ms / 1000
        self.headers = headers
        self.garbled = garbled
        self.retry_after = retry_after
        self.answer_tokens = answer_tokens
        self.stats = Stats()
        self._requests = _Bucket(requests, window_s)
        #: OpenAI: one tokens bucket (input + max_tokens); Anthropic: input and output.
        self._tokens = _Bucket(tokens, window_s) if tokens is not None else None
        self._output = _Bucket(output_tokens, window_s) if output_tokens is not None else None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_get("/stats", self._stats)
        return app

    # -- in-process --------------------------------------------------------------------

    def __enter__(self) -> RateLimitedServer:
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        if loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        loop.run_until_complete(self.listen(0))
        self._ready.set()
        loop.run_forever()
        loop.close()

    async def listen(self, port: int) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    # -- the API -----------------------------------------------------------------------

    async def _openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = sum(len(_text(m.get("content"))) for m in body.get("messages", []))
        return await self._answer("openai", body, prompt)

    async def _anthropic(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = len(_text(body.get("system"))) + sum(
            len(_text(m.get("content"))) for m in body.get("messages", [])
        )
        return await self._answer("anthropic", body, prompt)

    async def _answer(self, api: str, body: dict[str, Any], prompt_chars: int) -> web.Response:
        input_tokens = math.ceil(prompt_chars / 4)
        max_tokens = int(body.get("max_tokens") or 16)
        with self._lock:
            self.stats.in_flight += 1
            self.stats.most_in_flight = max(self.stats.most_in_flight, self.stats.in_flight)
            admitted, wait, headers = self._admit(api, input_tokens, max_tokens)
            if admitted:
                self.stats.answered += 1
                model = str(body.get("model", ""))
                by_model = self.stats.answered_by_model
                by_model[model] = by_model.get(model, 0) + 1
                tokens = self.stats.tokens_by_model
                tokens[model] = tokens.get(model, 0.0) + input_tokens + max_tokens
                now = time.monotonic()
                self.stats.first_s = self.stats.first_s or now
                self.stats.last_s = now
            else:
                self.stats.throttled += 1
        try:
            if not admitted:
                if self.retry_after:
                    headers["retry-after"] = str(math.ceil(wait))
                    if api == "openai":
                        headers["retry-after-ms"] = str(round(wait * 1000))
                with self._lock:
                    told = wait if self.retry_after else None
                    self.stats.arrivals.append((time.monotonic(), 429, told))
                error = {"type": "rate_limit_error", "message": "rate limit reached"}
                return web.json_response({"error": error}, status=429, headers=headers)
            with self._lock:
                self.stats.arrivals.append((time.monotonic(), 200, None))
            await asyncio.sleep(self.latency_s)
            return web.json_response(self._body(api, body, input_tokens), headers=headers)
        finally:
            with self._lock:
                self.stats.in_flight -= 1

    def _admit(
        self, api: str, input_tokens: int, max_tokens: int
    ) -> tuple[bool, float, dict[str, str]]:
        now = time.monotonic()
        buckets = [b for b in (self._requests, self._tokens, self._output) if b is not None]
        for bucket in buckets:
            bucket.refill(now)
        charges: list[tuple[_Bucket | None, float]]
        if api == "openai" or self._output is None:
            charges = [(self._requests, 1.0), (self._tokens, float(input_tokens + max_tokens))]
        else:
            charges = [
                (self._requests, 1.0),
                (self._tokens, float(input_tokens)),
                (self._output, float(max_tokens)),
            ]
        waits = [b.short_s(c) for b, c in charges if b is not None]
        wait = max(waits)
        admitted = wait <= 0
        if admitted:
            for charged, charge in charges:
                if charged is not None:
                    charged.level -= charge
                    if charged is self._tokens:
                        self.stats.tokens_charged += charge
        return admitted, wait, self._headers(api) if self.headers else {}

    def _headers(self, api: str) -> dict[str, str]:
        out: dict[str, str] = {}
        named: dict[str, _Bucket | None]
        if api == "openai":
            named = {
                "requests": self._requests,
                "tokens": self._tokens,
            }
            for name, bucket in named.items():
                if bucket is None:
                    continue
                out[f"x-ratelimit-limit-{name}"] = str(int(bucket.capacity))
                out[f"x-ratelimit-remaining-{name}"] = str(max(0, math.floor(bucket.level)))
                out[f"x-ratelimit-reset-{name}"] = _duration(bucket.reset_s())
        else:
            named = {
                "requests": self._requests,
                "input-tokens": self._tokens,
                "output-tokens": self._output,
            }
            present = {n: b for n, b in named.items() if b is not None}
            tightest = min(
                (b for n, b in present.items() if n != "requests"),
                key=lambda b: b.level / b.capacity,
                default=None,
            )
            if tightest is not None:
                present["tokens"] = tightest
            for name, bucket in present.items():
                prefix = f"anthropic-ratelimit-{name}"
                out[f"{prefix}-limit"] = str(int(bucket.capacity))
                out[f"{prefix}-remaining"] = str(max(0, math.floor(bucket.level)))
                out[f"{prefix}-reset"] = _moment(bucket.reset_s())
        if self.garbled:
            out = {k: ("soon" if "reset" in k else "lots") for k in out}
        return out

    def _body(self, api: str, body: dict[str, Any], input_tokens: int) -> dict[str, Any]:
        text = "ok " * self.answer_tokens
        model = str(body.get("model", "fake"))
        if api == "openai":
            return {
                "id": "chatcmpl-rl",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text.strip()},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": input_tokens,
                    "completion_tokens": self.answer_tokens,
                    "total_tokens": input_tokens + self.answer_tokens,
                },
            }
        return {
            "id": "msg_rl",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text.strip()}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": input_tokens, "output_tokens": self.answer_tokens},
        }

    async def _stats(self, request: web.Request) -> web.Response:
        with self._lock:
            figures = asdict(self.stats)
        figures.pop("arrivals")
        return web.json_response(figures)

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = Stats()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=float, required=True)
    parser.add_argument("--tokens", type=float)
    parser.add_argument("--output-tokens", type=float)
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--no-headers", action="store_true")
    args = parser.parse_args()
    server = RateLimitedServer(
        requests=args.requests,
        tokens=args.tokens,
        output_tokens=args.output_tokens,
        window_s=args.window_s,
        latency_ms=args.latency_ms,
        headers=not args.no_headers,
    )

    async def serve() -> None:
        await server.listen(0)
        print(server.url, flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()


__all__ = ["RateLimitedServer", "Stats"]
