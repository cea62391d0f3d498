"""A real loopback LLM API server for tests and benchmarks (no mocks, no network).

It speaks three wire formats on one port (any path prefix, so use
`openai_base_url` = `http://127.0.0.1:PORT/v1` and `anthropic_base_url` =
`http://127.0.0.1:PORT`):

    POST .../chat/completions   OpenAI Chat Completions
    POST .../messages           Anthropic Messages
    POST .../embeddings         OpenAI embeddings (deterministic unit vectors from a hash)

How a request chooses its behaviour: control tokens written anywhere in the
LAST USER MESSAGE (so a suite selects a mode through its prompt template or a
case var, and every sample of that case behaves the same):

    MODE:<mode>       the behaviour, default `json`:
        json          200, VALID_JSON as the text, finish stop
        echo          200, the user message with the control tokens removed, finish stop
        preamble      200, "Here is the JSON you asked for:" + newline + VALID_JSON
        loop          200, a degenerate token loop (fails compression-ratio, distinct-n)
        length        200, truncated JSON, finish_reason `length` (Anthropic `max_tokens`)
        refusal       200, an apology text refusing the request, finish stop
        refusal-stop  200, OpenAI `message.refusal` set (content null) / Anthropic
                      stop_reason `refusal`
        reset         the socket is closed abruptly (TCP RST) after the request is read
        500           HTTP 500 whose error body quotes the credentials it received
                      (real servers echo input; tests check redline redacts the key)
        401           HTTP 401 quoting the credentials received (not retried by clients)
        429           HTTP 429 with `Retry-After` (see RETRY_AFTER)
        slow          sleeps DELAY_MS (default 2000) before answering like `json`
        invalid       200 whose body is not JSON
        missing       200 whose JSON body lacks the answer fields
        flaky         4 of 5 requests answer `json`, every 5th answers like `preamble`
                      (counted per (api, user text), so 5 samples of a case: exactly one bad)
        words         200, a reply of WORDS:<lo>-<hi> words (default 10-30), the count drawn
                      from the request's seed: usage tokens that vary like a real model's
        tool          an agent: while the conversation holds fewer tool results than STEPS,
                      it calls the tools CALL:<name>[,<name>...] (several: parallel calls;
                      default the first declared tool) with ARGS:<compact JSON> (default
                      {}); then it answers "Done: " + the last tool result. OpenAI
                      `tool_calls` (finish `tool_calls`) / Anthropic `tool_use` blocks
                      (stop_reason `tool_use`)
        tool-bad-args like `tool`, with arguments that are not JSON (Anthropic: an `input`
                      that is a string, not an object)
    STEPS:<n>         for the tool modes: requests that call before the answer (default 1;
                      `inf`: it never stops calling)
    Anthropic requests forcing one tool (`tool_choice: {type: tool}`, how redline asks for
    a response format) answer in `json` mode with that tool called, VALID_JSON as its input.
    MODE_FOR:<model>=<mode>  this mode instead of MODE when the request names <model>
                      (so one suite behaves differently on two pinned models)
    RATE:<percent>    in any content mode: answer VALID_JSON for that share of seeds and like
                      `preamble` for the rest, decided by a hash of the request's seed (so a
                      case with frozen seeds gets the same answers in every run)
    FAILS:<n>         for reset/500/401/429/slow/invalid/missing: only the first n attempts of a
                      request key misbehave, later ones answer like `json`
                      (default: every attempt misbehaves)
    RETRY_AFTER:<v>   the 429 Retry-After value (default `1`; `none` sends no header)
    DELAY_MS:<n>      sleep n ms before answering (any mode; for `slow`, only while it fails)
    CACHED:<n>        n of the prompt's tokens come from the provider's prompt cache, in each
                      API's own words (OpenAI `prompt_tokens_details.cached_tokens`, counted
                      in `prompt_tokens`; Anthropic `cache_read_input_tokens`, not counted
                      in `input_tokens`)
    CACHE_WRITE:<n>   Anthropic only: n prompt tokens written to the cache
                      (`cache_creation_input_tokens`, not counted in `input_tokens`)

Answers can also depend on the model id: `model_pass_rates` maps a model name to the
chance (0 to 1) that its `echo` answer comes back intact; otherwise it answers
WRONG_ANSWER. The draw is a hash of (model, seed), so it is fixed per sample and
independent between runs (redline draws new seeds per run): 1.0 is a model that is
always right, 0.0 one that is always wrong, 0.8 a flaky one. See `keeps_answer`.

Attempts are counted per request key = (api, user text, seed), so each sample
(distinct seed) of a case has its own attempt counter. The server-wide
`latency_ms` (constructor or attribute) is added to every request: the runner
benchmark uses 50 ms.

`hold_after(n)` sends the next n answers and holds every later one until `release()`:
a run stopped with exactly n samples finished, however fast or slow the machine is.

Everything received is recorded (`requests`: time, api, path, lower-cased
headers, parsed body, mode, attempt, status answered) so tests can assert retry
counts, what was sent, and waits between attempts from server-side timestamps.

Run standalone for benchmarks or manual checks:
    uv run python tests/servers.py --latency-ms 50     # prints the base URL, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VALID_JSON = '{"status": "ok", "total_idr": 12500000, "supplier": "PT Sinar Jaya"}'
PREAMBLE = "Here is the JSON you asked for:\n"
LOOP_TEXT = "the answer is the answer is " * 60
TRUNCATED_JSON = '{"status": "ok", "total_idr": 125'
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
WRONG_ANSWER = "Your refund was approved; the amount will follow by email."
MODES = (
    "json",
    "echo",
    "preamble",
    "loop",
    "length",
    "refusal",
    "refusal-stop",
    "reset",
    "500",
    "401",
    "429",
    "slow",
    "invalid",
    "missing",
    "flaky",
    "words",
    "tool",
    "tool-bad-args",
)
FAULT_MODES = frozenset({"reset", "500", "401", "429", "slow", "invalid", "missing"})
DEFAULT_SLOW_MS = 2000
EMBEDDING_DIM = 16

_TOKEN = re.compile(
    r"\b(MODE|MODE_FOR|FAILS|RETRY_AFTER|DELAY_MS|WORDS|RATE|CALL|ARGS|STEPS|CACHED|CACHE_WRITE)"
    r":(\S+)"
)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it."""

    at: float
    api: str
    path: str
    headers: dict[str, str]
    body: Any
    mode: str
    attempt: int
    status: int


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    reset: bool = False


class LoopbackLLMServer:
    """Threaded HTTP server on 127.0.0.1 with an ephemeral port; see the module docstring."""

    def __init__(self, latency_ms: float = 0.0, port: int = 0) -> None:
        self.latency_ms = latency_ms
        self.model_pass_rates: dict[str, float] = {}
        #: What a successful OpenAI answer says about the build behind it: the body's
        #: `system_fingerprint` and a `server` header (None: not sent), as a provider does.
        self.fingerprint: str | None = None
        self.server_version: str | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[ReceivedRequest] = []
        self._attempts: Counter[tuple[str, str, object]] = Counter()
        self._flaky: Counter[tuple[str, str]] = Counter()
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        #: A scripted model: (system, user) → the answer text, or None for the usual modes.
        #: It answers only requests that would otherwise get the default `json` answer.
        self.responder: Callable[[str, str], str | None] | None = None
        self._thread: threading.Thread | None = None
        #: With `hold_after`: answers still sent before the rest are held; None: none held.
        self._free: int | None = None
        self._released = threading.Event()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def start(self) -> LoopbackLLMServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="loopback-llm",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def hold_after(self, answers: int) -> None:
        """Send the next `answers` answers, then hold every later one until `release()`
        (or the server stops): a run in flight with exactly that many samples finished."""
        with self._lock:
            self._free = answers
            self._released.clear()

    def release(self) -> None:
        """Send the held answers, and every later one at once."""
        with self._lock:
            self._free = None
        self._released.set()

    def _hold(self) -> None:
        with self._lock:
            if self._free is None:
                return
            if self._free > 0:
                self._free -= 1
                return
        while not self._released.wait(0.05) and not self._stopping.is_set():
            pass

    def reset(self) -> None:
        """Forget recorded requests and counters; restore zero latency; hold nothing."""
        with self._lock:
            self._requests.clear()
            self._attempts.clear()
            self._flaky.clear()
        self.latency_ms = 0.0
        self.release()
        self.responder = None
        self.model_pass_rates = {}
        self.fingerprint = None
        self.server_version = None

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    def count(self, mode: str | None = None, api: str | None = None) -> int:
        """How many requests arrived (optionally only of one mode and/or api)."""
        return sum(
            1
            for r in self.requests
            if (mode is None or r.mode == mode) and (api is None or r.api == api)
        )

    def redline_toml(
        self,
        *,
        key_env: str = "REDLINE_LOOPBACK_KEY",
        timeout_s: float = 2.0,
        max_retries: int = 2,
        backoff_base_s: float = 0.01,
        backoff_max_s: float = 0.05,
        concurrency: int = 4,
        extra: str = "",
        models: str = "",
    ) -> str:
        """A redline.toml pinning `fake` (OpenAI-compatible) and `fake-anthropic` to this server.

        Also prices `fake` so cost is known. `extra` is appended verbatim; `models` adds
        lines to the [models] table (e.g. a second pinned model on this server).
        """
        common = (
            f'api_key_env = "{key_env}"\ntimeout_s = {timeout_s}\nmax_retries = {max_retries}\n'
            f"backoff_base_s = {backoff_base_s}\nbackoff_max_s = {backoff_max_s}\n"
        )
        return (
            f"concurrency = {concurrency}\n\n"
            "[models]\n"
            'fake = "loopback:fake-model-2025-01-01"\n'
            'fake-anthropic = "loopback-anthropic:claude-fake-2025-01-01"\n'
            f"{models}\n"
            "[providers.loopback]\n"
            'type = "openai"\n'
            f'base_url = "{self.openai_base_url}"\n{common}\n'
            "[providers.loopback-anthropic]\n"
            'type = "anthropic"\n'
            f'base_url = "{self.anthropic_base_url}"\n{common}\n'
            '[prices."loopback:fake-model-2025-01-01"]\n'
            "input_per_mtok = 1.0\noutput_per_mtok = 2.0\n"
            f"{extra}"
        )

    def _record(
        self, api: str, path: str, headers: dict[str, str], body: Any, text: str, seed: object
    ) -> tuple[str, int, int, dict[str, str]]:
        tokens = _tokens(text)
        mode = tokens.get("MODE", "json")
        model, _, model_mode = tokens.get("MODE_FOR", "").partition("=")
        if model and isinstance(body, dict) and body.get("model") == model:
            mode = model_mode
        with self._lock:
            key = (api, text, seed)
            self._attempts[key] += 1
            attempt = self._attempts[key]
            flaky = 0
            if mode == "flaky":
                self._flaky[(api, text)] += 1
                flaky = self._flaky[(api, text)]
        return mode, attempt, flaky, tokens

    def _log(self, request: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    owner: LoopbackLLMServer

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that time out and hang up are part of the tests; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

    def do_POST(self) -> None:
        arrived = time.monotonic()
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        api = _api(self.path)
        if api == "unknown":
            self._send(_error_reply(404, f"unknown endpoint {self.path}", "openai"))
            return
        text = _user_text(api, body)
        seed = body.get("seed") if isinstance(body, dict) else None
        mode, attempt, flaky, tokens = owner._record(api, self.path, headers, body, text, seed)
        fault = mode in FAULT_MODES and attempt <= _fails(tokens)
        effective = "json" if mode in FAULT_MODES and not fault else mode
        extra_ms = float(tokens.get("DELAY_MS", 0))
        if mode == "slow":
            extra_ms = (extra_ms or DEFAULT_SLOW_MS) if fault else 0.0
            effective = "json"
        scripted = None
        if owner.responder is not None and effective == "json" and api != "embeddings":
            scripted = owner.responder(_system_text(api, body), text)
        reply = _reply(api, effective, body, text, tokens, flaky, _credentials(headers), scripted)
        model = body.get("model") if isinstance(body, dict) else None
        rate = owner.model_pass_rates.get(str(model))
        if effective == "echo" and rate is not None and not keeps_answer(str(model), seed, rate):
            reply = _reply(api, "wrong", body, text, tokens, flaky, _credentials(headers))
        if api == "openai" and reply.status == 200 and not reply.reset:
            reply = _self_described(reply, owner.fingerprint, owner.server_version)
        owner._log(
            ReceivedRequest(
                at=arrived,
                api=api,
                path=self.path,
                headers=headers,
                body=body,
                mode=mode,
                attempt=attempt,
                status=0 if reply.reset else reply.status,
            )
        )
        owner._wait((extra_ms + owner.latency_ms) / 1000)
        owner._hold()
        self._send(reply)

    def _send(self, reply: _Reply) -> None:
        if reply.reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        head = [
            f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
            "content-type: application/json",
            f"content-length: {len(reply.body)}",
            *(f"{name}: {value}" for name, value in reply.headers),
        ]
        try:
            self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body)
        except OSError:
            self.close_connection = True


def _self_described(reply: _Reply, fingerprint: str | None, server: str | None) -> _Reply:
    """The answer with the provider's description of itself, where the test set one."""
    if fingerprint is not None:
        data = json.loads(reply.body)
        data["system_fingerprint"] = fingerprint
        reply = _Reply(reply.status, json.dumps(data).encode(), reply.headers, reply.reset)
    if server is not None:
        reply = _Reply(reply.status, reply.body, (*reply.headers, ("server", server)), reply.reset)
    return reply


def _api(path: str) -> str:
    clean = path.split("?", 1)[0].rstrip("/")
    if clean.endswith("/chat/completions"):
        return "openai"
    if clean.endswith("/messages"):
        return "anthropic"
    if clean.endswith("/embeddings"):
        return "embeddings"
    return "unknown"


def _fails(tokens: dict[str, str]) -> float:
    return int(tokens["FAILS"]) if "FAILS" in tokens else math.inf


def _tokens(text: str) -> dict[str, str]:
    return {name: value for name, value in _TOKEN.findall(text)}


def _user_text(api: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if api == "embeddings":
        inputs = body.get("input")
        return inputs if isinstance(inputs, str) else json.dumps(inputs)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list) and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                continue  # an Anthropic turn answering tool calls, not the user speaking
            return _content_text(content)
    return ""


def _system_text(api: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if api == "anthropic":
        return _content_text(body.get("system", ""))
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "system":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _credentials(headers: dict[str, str]) -> str:
    return headers.get("authorization") or headers.get("x-api-key") or "none"


def _reply(
    api: str,
    mode: str,
    body: Any,
    text: str,
    tokens: dict[str, str],
    flaky: int,
    credentials: str,
    scripted: str | None = None,
) -> _Reply:
    if api == "embeddings":
        return _embeddings(body)
    if mode == "reset":
        return _Reply(status=0, body=b"", reset=True)
    if mode == "500":
        return _error_reply(500, f"failed on purpose; request credentials: {credentials}", api)
    if mode == "401":
        return _error_reply(401, f"Incorrect API key provided: {credentials}", api)
    if mode == "429":
        value = tokens.get("RETRY_AFTER", "1")
        reply = _error_reply(429, "rate limited on purpose", api)
        headers = () if value == "none" else (("retry-after", value),)
        return _Reply(status=429, body=reply.body, headers=headers)
    if mode == "invalid":
        return _Reply(status=200, body=b'{"choices": [{"message": {"content": "unterminated')
    if mode == "missing":
        return _Reply(status=200, body=json.dumps({"id": "x", "object": "nothing"}).encode())
    if mode in ("tool", "tool-bad-args"):
        return _ok(_tool_reply(api, mode, body, tokens))
    if mode == "json" and api == "anthropic" and isinstance(body, dict):
        forced = body.get("tool_choice")
        if isinstance(forced, dict) and forced.get("type") == "tool":
            call = {"name": forced.get("name"), "arguments": VALID_JSON}
            return _ok(_tool_body(api, str(body.get("model", "")), [call], 0))
    if mode == "flaky":
        mode = "preamble" if flaky % 5 == 0 else "json"
    if "RATE" in tokens:
        seed = body.get("seed") if isinstance(body, dict) else None
        mode = "json" if rate_answers_json(seed, float(tokens["RATE"])) else "preamble"
    finish = "stop"
    refusal: str | None = None
    if mode == "echo":
        content = _TOKEN.sub("", text).strip()
    elif mode == "preamble":
        content = PREAMBLE + VALID_JSON
    elif mode == "loop":
        content = LOOP_TEXT
    elif mode == "wrong":
        content = WRONG_ANSWER
    elif mode == "length":
        content, finish = TRUNCATED_JSON, "length"
    elif mode == "refusal":
        content = REFUSAL_TEXT
    elif mode == "words":
        content = _words(
            tokens.get("WORDS", "10-30"), body.get("seed") if isinstance(body, dict) else None
        )
    elif mode == "refusal-stop":
        content, refusal = "", REFUSAL_TEXT
    else:
        content = VALID_JSON if scripted is None else scripted
    model = body.get("model", "") if isinstance(body, dict) else ""
    prompt_tokens = len(
        json.dumps(body.get("messages", "") if isinstance(body, dict) else "").split()
    )
    completion_tokens = len((content or refusal or "").split())
    cached, written = int(tokens.get("CACHED", 0)), int(tokens.get("CACHE_WRITE", 0))
    if api == "anthropic":
        payload = _anthropic_body(
            model, content or refusal or "", finish, refusal, prompt_tokens, completion_tokens
        )
        if cached or written:
            payload["usage"] |= {
                "input_tokens": prompt_tokens - cached - written,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": written,
            }
        return _ok(payload)
    payload = _openai_body(model, content, finish, refusal, prompt_tokens, completion_tokens)
    if cached:
        payload["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
    return _ok(payload)


def _tool_reply(api: str, mode: str, body: Any, tokens: dict[str, str]) -> dict[str, Any]:
    """The `tool` modes: call tools until STEPS tool results are in, then answer."""
    body = body if isinstance(body, dict) else {}
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    results = _tool_results(api, messages)
    model = str(body.get("model", ""))
    steps = tokens.get("STEPS", "1")
    if steps != "inf" and len(results) >= int(steps):
        answer = f"Done: {results[-1]}"
        if api == "anthropic":
            return _anthropic_body(model, answer, "stop", None, 10, len(answer.split()))
        return _openai_body(model, answer, "stop", None, 10, len(answer.split()))
    declared = [_tool_name(t) for t in body.get("tools") or []]
    names = tokens["CALL"].split(",") if "CALL" in tokens else declared[:1]
    arguments = '{"order_id": "A-1"' if mode == "tool-bad-args" else tokens.get("ARGS", "{}")
    calls = [{"name": name, "arguments": arguments} for name in names]
    return _tool_body(api, model, calls, len(results))


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        return str(tool["function"].get("name"))
    return str(tool.get("name")) if isinstance(tool, dict) else ""


def _tool_results(api: str, messages: list[Any]) -> list[str]:
    """The tool results a conversation holds so far, in order."""
    found = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        if api == "openai" and message.get("role") == "tool":
            found.append(_content_text(message.get("content")))
        content = message.get("content")
        if api == "anthropic" and isinstance(content, list):
            found += [
                _content_text(b.get("content"))
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    return found


def _tool_body(api: str, model: str, calls: list[dict[str, str]], turn: int) -> dict[str, Any]:
    """A reply calling `calls` (name, raw arguments text) in the api's wire format."""
    if api == "anthropic":
        blocks = []
        for i, call in enumerate(calls):
            try:
                value: Any = json.loads(call["arguments"])
            except ValueError:
                value = call["arguments"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{turn}_{i}",
                    "name": call["name"],
                    "input": value,
                }
            )
        return {
            "id": "msg_loopback",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5 * len(calls)},
        }
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for i, call in enumerate(calls)
        ],
    }
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5 * len(calls), "total_tokens": 0},
    }


def _words(spec: str, seed: object) -> str:
    low, _, high = spec.partition("-")
    lo, hi = int(low), int(high or low)
    digest = hashlib.sha256(str(seed).encode()).digest()
    n = lo + int.from_bytes(digest[:4], "big") % (hi - lo + 1)
    return " ".join(f"word{i}" for i in range(n))


def _openai_body(
    model: str,
    content: str,
    finish: str,
    refusal: str | None,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _anthropic_body(
    model: str,
    content: str,
    finish: str,
    refusal: str | None,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    stop_reason = {"stop": "end_turn", "length": "max_tokens"}[finish]
    if refusal is not None:
        stop_reason = "refusal"
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": content}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens},
    }


def _embeddings(body: Any) -> _Reply:
    inputs = body.get("input") if isinstance(body, dict) else None
    texts = [inputs] if isinstance(inputs, str) else inputs
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return _error_reply(400, "input must be a string or a list of strings", "openai")
    dim = body.get("dimensions", EMBEDDING_DIM) if isinstance(body, dict) else EMBEDDING_DIM
    data = [
        {"object": "embedding", "index": i, "embedding": embedding_vector(t, int(dim))}
        for i, t in enumerate(texts)
    ]
    used = sum(len(t.split()) for t in texts)
    return _ok(
        {
            "object": "list",
            "data": data,
            "model": body.get("model", "") if isinstance(body, dict) else "",
            "usage": {"prompt_tokens": used, "total_tokens": used},
        }
    )


def rate_answers_json(seed: object, rate: float) -> bool:
    """Whether `RATE:<rate>` answers the request with this seed in valid JSON (see module doc)."""
    return int(hashlib.sha256(str(seed).encode()).hexdigest()[:8], 16) % 100 < rate


def keeps_answer(model: str, seed: object, rate: float) -> bool:
    """Whether `model` answers sample `seed` intact, at pass rate `rate` (see module doc)."""
    digest = hashlib.sha256(f"{model}\x00{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def embedding_vector(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """The unit vector the server returns for `text` (same text → same vector)."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _ok(payload: dict[str, Any]) -> _Reply:
    return _Reply(status=200, body=json.dumps(payload).encode())


def _error_reply(status: int, message: str, api: str) -> _Reply:
    if api == "anthropic":
        kinds = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
        kind = kinds.get(status, "api_error")
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"message": message, "type": "server_error", "code": status}}
    return _Reply(status=status, body=json.dumps(payload).encode())


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the loopback LLM API until Ctrl-C.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    server = LoopbackLLMServer(latency_ms=args.latency_ms, port=args.port).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
