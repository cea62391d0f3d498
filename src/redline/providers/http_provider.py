"""What every HTTP provider shares: one client, timeouts, retries, latency and cost.

A vendor module only says how to build the request body and how to read the answer; the
retry loop here decides what is worth trying again: transport errors (connect/read/write
errors, resets, protocol errors, timeouts), 5xx and malformed 2xx bodies with
exponential backoff and full jitter; 429 after the server's Retry-After. Other 4xx are
not retried, nor an answer the vendor reads as a `refusal` of every request (the
account's quota or credit spent, no such model: before any answer the run stops). Errors
never contain the API key nor the userinfo of any URL. An endpoint that is not there
(refused, DNS, TLS, HTTP 404/405, a redirect, a proxy asking for credentials, or a 2xx
whose body is not JSON and says so: a web page) while this provider has never answered
is not retried and is marked `Refusal.ENDPOINT`: the run stops instead of draining its
queue. `latency_ms` is the answering attempt's own time; when retries happened,
`extra["elapsed_ms"]` includes them and the waits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from redline.config import ModelRef, Price, ProviderConfig
from redline.httpio import HttpClient, HttpFailure, HttpPolicy
from redline.provider_options import DEFAULT_MAX_CONCURRENCY
from redline.providers.ratelimit import Cost, RateLimiter, endpoint_limiter
from redline.providers.retries import RetryPolicy
from redline.redaction import redact, redact_url
from redline.version import __version__
from redline.vocabulary.completion import (
    BYTES_PER_TOKEN,
    UNSET_MAX_TOKENS,
    ChatRequest,
    Completion,
    FinishReason,
    Refusal,
)
from redline.vocabulary.messages import ToolCall

USER_AGENT = f"redline/{__version__}"
_BODY_SNIPPET = 300
#: Bytes past a snippet's end still read for redaction: a URL's userinfo cut by the end.
_USERINFO_ROOM = 1024
#: HTTP statuses that say the URL is wrong (no such path, or not one that takes a POST).
_NOT_THE_ENDPOINT = (404, 405)
_PROXY_REFUSED = (
    "HTTP 407: the proxy refused to carry the request with the credentials it was given; "
    "check the user and password in the proxy variable (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY)"
)


class MalformedResponse(ValueError):
    """A 2xx answer whose body is not what the API promises: a server bug, retried."""


class NotJson(MalformedResponse):
    """A 2xx body that is not JSON at all: before any answer, and with a content type that
    says so too (a web page), not the API's address."""

    def __init__(self, reason: str, snippet: str) -> None:
        super().__init__(f"not JSON ({reason}): {snippet}")
        self.snippet = snippet


@dataclass(frozen=True)
class Answer:
    """The parts of a successful response body redline keeps."""

    text: str
    finish_reason: FinishReason | None
    model: str
    input_tokens: int | None
    output_tokens: int | None
    tool_calls: tuple[ToolCall, ...] = ()
    #: What the server says about the build that answered (OpenAI's `system_fingerprint`).
    system_fingerprint: str | None = None
    #: Of `input_tokens`, those read from and written to the prompt cache.
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None


#: Response headers naming the server software and its version, first found wins.
_SERVER_HEADERS = ("x-server-version", "server")


class HttpProvider(ABC):
    """Base of the HTTP providers; subclasses implement the vendor wire format."""

    max_parallel: int | None = None
    #: The HTTP method requests are sent with.
    method = "POST"

    def __init__(
        self,
        model: ModelRef,
        config: ProviderConfig,
        *,
        base_url: str,
        api_key: str | None,
        price: Price | None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        ca_bundle: Path | None = None,
    ) -> None:
        self.model = model
        self.config = config
        self.base_url = base_url.rstrip("/")
        self.policy = RetryPolicy.from_config(config)
        self._api_key = api_key
        self._price = price
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._client = HttpClient(
            HttpPolicy(
                timeout_s=config.timeout_s,
                max_response_bytes=config.max_response_bytes,
                ca_bundle=ca_bundle,
            ),
            headers={"user-agent": USER_AGENT, "content-type": "application/json"},
            secrets=[api_key] if api_key else [],
        )
        #: The endpoint has answered once: a later unreachable spell is retried like any
        #: transport error (the circuit breaker of the run decides when to give up).
        self._answered = False
        #: The endpoint and headers, built at the first request: the same for every one.
        self._fixed: tuple[str, dict[str, str]] | None = None
        #: Paces requests and sizes concurrency by the endpoint's rate limit: the one
        #: limiter of the endpoint, joined when a run asks for it (`ride_rate_limit`) or
        #: at the first request of whatever else sends (a judge, the semantic checker).
        self.rate_limiter: RateLimiter | None = None

    def ride_rate_limit(self, start: int | None = None) -> RateLimiter | None:
        """The endpoint's limiter, starting at `start` in flight when this is its first
        caller (None: a caller that bounds its own concurrency, a judge's or calibrate's,
        starts at the most the limit may grow to: paced by the headers, cut by 429s);
        None when the provider's table turns adaptation off (concurrency stays fixed)."""
        options = self.config.options
        if self.rate_limiter is None and options.get("adaptive_concurrency", False):
            maximum = int(options.get("max_concurrency") or start or DEFAULT_MAX_CONCURRENCY)
            self.rate_limiter = endpoint_limiter(
                self.base_url, self._api_key, min(start or maximum, maximum), maximum
            )
        return self.rate_limiter

    def __repr__(self) -> str:
        base_url = redact_url(self.base_url)
        return f"{type(self).__name__}(model={self.model.id!r}, base_url={base_url!r})"

    def identity(self) -> str:
        return self.model.id

    async def aclose(self) -> None:
        await self._client.aclose()

    @property
    @abstractmethod
    def endpoint(self) -> str:
        """The full URL requests are posted to."""

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """Request headers, including authentication."""

    @abstractmethod
    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for one request."""

    @abstractmethod
    def parse(self, body: Any) -> Answer:
        """Read a 2xx JSON body; raise MalformedResponse when it is not usable."""

    def refusal(self, status: int, body: Any) -> tuple[Refusal, str] | None:
        """What an error answer (its JSON body) says about every request rather than this
        one, with the provider's words: the account's quota or credit spent, or no such
        model. None: this request's own failure."""
        return None

    @property
    def client(self) -> HttpClient:
        """The provider's HTTP client (its batch API shares it: the same key, limits, trust)."""
        return self._client

    @property
    def price(self) -> Price | None:
        return self._price

    def finish(self, request: ChatRequest, completion: Completion) -> Completion:
        """The sample's completion from the API's answer to `request` (a vendor reads more
        out of it here)."""
        return completion

    def answer_of(self, request: ChatRequest, body: Any, *, price: Price | None) -> Completion:
        """The completion one answer body makes when it came another way than this request
        (a batch API's result line), priced at `price`; no latency of its own is known."""
        try:
            answer = self.parse(body)
        except MalformedResponse as exc:
            return self.failed(f"malformed answer in the batch results: {exc}")
        completion = self._completion(answer, 0.0, 1, time.perf_counter(), None)
        cost = None
        if price is not None:
            cost = price.cost(
                answer.input_tokens,
                answer.output_tokens,
                answer.cached_input_tokens,
                answer.cache_write_tokens,
            )
        return self.finish(request, dataclasses.replace(completion, latency_ms=None, cost=cost))

    def failed(self, error: str) -> Completion:
        """A sample's failed completion (from a batch: no latency of its own): `error` says
        why, redacted."""
        return dataclasses.replace(self._failure(error, 1, time.perf_counter()), latency_ms=None)

    async def complete(self, request: ChatRequest) -> Completion:
        limiter = self.rate_limiter or self.ride_rate_limit()
        if limiter is None:
            return await self._attempts(request, None)
        async with limiter.request():
            return await self._attempts(request, limiter)

    async def _attempts(self, request: ChatRequest, limiter: RateLimiter | None) -> Completion:
        """Try the request until it is answered, fails for good, or runs out of retries."""
        content = json.dumps(
            self.payload(request), ensure_ascii=False, separators=(",", ":")
        ).encode()
        if self._fixed is None:
            self._fixed = (self.endpoint, self.headers())
        url, headers = self._fixed
        cost = None if limiter is None else _cost(request, len(content))
        went = 0.0
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            if limiter is not None and cost is not None:
                went = await limiter.admit(cost, retrying=attempt > 1)
            attempt_started = time.perf_counter()
            wait: float | None = None
            try:
                response = await self._client.request(
                    self.method, url, body=content, headers=headers
                )
            except HttpFailure as exc:
                error = f"transport error: {exc}"
                if exc.unreachable and not self._answered:
                    return self._unreachable(error, attempt, started)
            else:
                latency_ms = (time.perf_counter() - attempt_started) * 1000
                status, raw = response.status, response.body
                if limiter is not None and status != 429:
                    limiter.answered(response.headers, went)
                if 200 <= status < 300:
                    try:
                        answer = self.parse(_json(raw, self._api_key))
                    except MalformedResponse as exc:
                        kind = response.headers.get("content-type", "")
                        if isinstance(exc, NotJson) and _not_json(kind) and not self._answered:
                            return self._unreachable(
                                f"{redact_url(url)} answered HTTP {status} with a body that "
                                f"is not JSON ({kind}), so it is not the API: {exc.snippet}",
                                attempt,
                                started,
                            )
                        error = f"malformed response body (HTTP {status}): {exc}"
                    else:
                        self._answered = True
                        server = next(
                            (v for h in _SERVER_HEADERS if (v := response.headers.get(h))), None
                        )
                        return self.finish(
                            request,
                            self._completion(answer, latency_ms, attempt, started, server),
                        )
                elif (refused := self.refusal_in(status, raw)) is not None:
                    failure = self._failure(refused[1], attempt, started)
                    return dataclasses.replace(failure, refusal=refused[0])
                elif status == 429:
                    error = f"HTTP 429 Too Many Requests: {_snippet(raw, self._api_key)}"
                    if limiter is not None and cost is not None:
                        wait = limiter.throttled(
                            response.headers,
                            cost,
                            went,
                            backoff_s=self.policy.backoff_s(attempt, self._rng),
                            longest_s=self.policy.backoff_max_s,
                        )
                    else:
                        wait = self.policy.retry_after_s(response.headers.get("retry-after"))
                elif status >= 500:
                    error = f"HTTP {status}: {_snippet(raw, self._api_key)}"
                elif (wrong := self._not_the_api(status, url, response.headers, raw)) is not None:
                    if not self._answered:
                        return self._unreachable(wrong, attempt, started)
                    return self._failure(wrong, attempt, started)
                else:
                    failure = self._failure(self._client_error(status, raw), attempt, started)
                    if status in (401, 403):
                        return dataclasses.replace(failure, refusal=Refusal.CREDENTIALS)
                    return failure
            if attempt > self.policy.max_retries:
                return self._failure(error, attempt, started)
            if wait is None:
                wait = self.policy.backoff_s(attempt, self._rng)
            await self._sleep(wait)

    def _unreachable(self, error: str, attempts: int, started: float) -> Completion:
        failure = self._failure(
            f"provider {self.config.name!r} (base_url {redact_url(self.base_url)}): {error}",
            attempts,
            started,
        )
        return dataclasses.replace(failure, refusal=Refusal.ENDPOINT)

    def refusal_in(self, status: int, raw: bytes) -> tuple[Refusal, str] | None:
        """The `refusal` a 4xx answer's JSON body says, and the error that says so: the
        status, what is refused, the provider's words (redacted, cut short)."""
        if not 400 <= status < 500:
            return None
        try:
            found = self.refusal(status, json.loads(raw))
        except (ValueError, UnicodeDecodeError):
            return None
        if found is None:
            return None
        refusal, said = found
        name = self.config.name
        what = (
            f"provider {name!r} refuses the account"
            if refusal is Refusal.ACCOUNT
            else f"provider {name!r} serves no model {self.model.name!r}"
        )
        return refusal, f"HTTP {status}: {what}: {_snippet(said.encode(), self._api_key)}"

    def _not_the_api(
        self, status: int, url: str, headers: Mapping[str, str], raw: bytes
    ) -> str | None:
        """Why an answer of this status says `url` is not the API (a redirect, the proxy's
        407, no such path or method); None for any other status."""
        if 300 <= status < 400:
            return self._redirected(status, url, headers.get("location"))
        if status == 407:
            return _PROXY_REFUSED
        if status in _NOT_THE_ENDPOINT:
            return f"HTTP {status} from {redact_url(url)}: {_snippet(raw, self._api_key)}"
        return None

    def _redirected(self, status: int, url: str, location: str | None) -> str:
        """A redirect, never followed (the API key would go with it): where it points, and
        the base_url that reaches it when it points at the same endpoint elsewhere."""
        if not location:
            return f"HTTP {status} from {redact_url(url)}: a redirect that says nowhere"
        target = urljoin(url, location)
        message = (
            f"HTTP {status}: {redact_url(url)} redirects to "
            f"{_snippet(target.encode(), self._api_key)}; redirects are not "
            "followed (the API key would go with them)"
        )
        endpoint = url.removeprefix(self.base_url)
        if endpoint != url and target != url and target.endswith(endpoint):
            base = target.removesuffix(endpoint)
            message += (
                f"; if that is the API, set base_url to {_snippet(base.encode(), self._api_key)}"
            )
        return message

    def _client_error(self, status: int, raw: bytes) -> str:
        if status in (401, 403):
            variable = self.config.api_key_env or "the API key variable"
            return (
                f"HTTP {status}: the provider rejected the credentials; "
                f"check the key in ${variable}"
            )
        return f"HTTP {status}: {_snippet(raw, self._api_key)}"

    def _completion(
        self,
        answer: Answer,
        latency_ms: float,
        attempts: int,
        started: float,
        server_version: str | None,
    ) -> Completion:
        cost = None
        if self._price is not None:
            cost = self._price.cost(
                answer.input_tokens,
                answer.output_tokens,
                answer.cached_input_tokens,
                answer.cache_write_tokens,
            )
        extra: dict[str, object] = {}
        if attempts > 1:
            extra["elapsed_ms"] = (time.perf_counter() - started) * 1000
        return Completion(
            text=answer.text,
            finish_reason=answer.finish_reason,
            model=answer.model or self.model.name,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            latency_ms=latency_ms,
            cost=cost,
            attempts=attempts,
            extra=extra,
            tool_calls=answer.tool_calls,
            system_fingerprint=answer.system_fingerprint,
            server_version=server_version,
            cached_input_tokens=answer.cached_input_tokens,
            cache_write_tokens=answer.cache_write_tokens,
        )

    def _failure(self, error: str, attempts: int, started: float) -> Completion:
        tried = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        return Completion(
            text="",
            finish_reason=None,
            model=self.model.name,
            latency_ms=(time.perf_counter() - started) * 1000,
            error=self._redact(f"{error} ({tried})"),
            attempts=attempts,
        )

    def _redact(self, text: str) -> str:
        return self._client.redact(text)


def _cost(request: ChatRequest, body_bytes: int) -> Cost:
    """What one request is expected to spend of a tokens limit: its body's length in
    tokens (as the cost estimate counts a prompt) and its max_tokens."""
    return Cost(
        input_tokens=math.ceil(body_bytes / BYTES_PER_TOKEN),
        output_tokens=request.max_tokens or UNSET_MAX_TOKENS,
    )


def _json(raw: bytes, secret: str | None = None) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotJson(str(exc), _snippet(raw, secret)) from None


def _not_json(content_type: str) -> bool:
    """A content type that says the body is something else than JSON (a web page, text):
    an API's body cut short still says JSON, and a body without one gets the doubt."""
    media = content_type.partition(";")[0].strip().lower()
    return bool(media) and media != "application/json" and not media.endswith("+json")


def _snippet(raw: bytes, secret: str | None = None) -> str:
    """The start of a response body for an error message, `secret` and URLs' userinfo
    redacted BEFORE the cut (a cut through an echoed key would leave its first part
    unredacted), on a head of the body long enough for both, never the whole of it."""
    head = raw[: 4 * _BODY_SNIPPET + 4 * len(secret or "") + _USERINFO_ROOM]
    text = redact(head.decode("utf-8", errors="replace").strip(), [secret] if secret else [])
    if len(text) > _BODY_SNIPPET:
        text = text[:_BODY_SNIPPET] + "…"
    return text or "(empty body)"


def optional_int(usage: Mapping[str, Any] | None, key: str) -> int | None:
    """A token count from a usage object, or None when the server did not say."""
    if not isinstance(usage, Mapping):
        return None
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
