"""Riding a provider's rate limit: how many samples are in flight, and when a request goes.

Providers say where their limit is on every answer: OpenAI in `x-ratelimit-limit-*`,
`x-ratelimit-remaining-*` and `x-ratelimit-reset-*` (durations such as `6m0s`, `20ms`),
Anthropic in `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*`
(reset times in RFC 3339). Each limit is read as a token bucket (its capacity, what is
left, how fast it refills: what is spent over the time to the reset), and redline keeps
its own copy of every bucket, set to the server's figure at each answer:

- **pacing**: a request goes once every bucket holds what it costs (one request; its
  estimated input and output tokens, scaled by what the server was seen to charge for
  earlier ones) plus a small reserve; otherwise it waits for the refill. Concurrency alone
  cannot keep a tokens-per-minute limit: pacing by the next request's tokens can.
- **concurrency** starts at the configured one and grows by one with each answer while
  every slot is busy and the headers show headroom, never above `max_concurrency`; a 429
  halves it and pauses every request until the server's `retry-after-ms` /
  `Retry-After` (or, without one, the reset of the exhausted limit).
- without rate-limit headers nothing is paced and concurrency stays where it started
  (after a 429 it halves, then climbs back to the start as answers succeed).

Garbled or missing headers are ignored one limit at a time.

An endpoint (a base URL and key) has one limiter per event loop, whoever sends to it: a
run's model calls, its judge's, `redline calibrate`'s all spend the same buckets and hold
the same concurrency, so none finds the limit by hitting it because another did not count.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from redline.providers.retries import parse_retry_after

#: The limits each API reports: name → (limit, remaining, reset) headers.
_OPENAI = {
    "requests": (
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ),
    "tokens": (
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
    ),
}
_ANTHROPIC = {
    name: tuple(f"anthropic-ratelimit-{name}-{part}" for part in ("limit", "remaining", "reset"))
    for name in ("requests", "tokens", "input-tokens", "output-tokens")
}
_FAMILIES = (_OPENAI, _ANTHROPIC)

#: The part of a limit kept in reserve, so that answers racing a request never tip it over.
RESERVE = 0.05
#: A bucket's refill rate when no answer has shown one yet: a per-minute limit.
DEFAULT_WINDOW_S = 60.0
#: Bounds of the learned ratio between what the server charges and redline's estimate.
_SCALE_BOUNDS = (0.05, 20.0)
#: Observations of a refill rate kept (a ratio of sums: rounded reset times average out).
_RATE_SAMPLES = 64
#: A limit is named in what a run says once an answer showed less than this share left.
_DRAWN_SHARE = 0.5
#: Requests an estimate of what the server charges is learned over, at the least.
_LEARN_REQUESTS = 8
#: Recent requests kept, to tell what went after a server counted its figure.
_SPENDS_KEPT = 4096
_SPENDS_S = 120.0
#: Longest single sleep of a paced request before it looks again (answers may free room).
_MAX_NAP_S = 0.25

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)")
_UNIT_S = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


def parse_reset(value: str | None, now: float | None = None) -> float | None:
    """Seconds until a limit resets: a duration (`1s`, `6m0s`, `20ms`, `1h2m3.5s`), plain
    seconds, or an RFC 3339 time; None when the value is none of these."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        seconds = _duration(text)
        if seconds is None:
            seconds = _moment(text, now)
    if seconds is None or math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


def _duration(text: str) -> float | None:
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _UNIT_S[match.group(2)]
        at = match.end()
    return total if at == len(text) and at > 0 else None


def _moment(text: str, now: float | None) -> float | None:
    try:
        when = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.timestamp() - (time.time() if now is None else now)


def retry_after_ms(value: str | None) -> float | None:
    """Seconds from a `retry-after-ms` header (OpenAI's), None when absent or garbled."""
    if value is None:
        return None
    try:
        ms = float(value.strip())
    except ValueError:
        return None
    return None if math.isnan(ms) or math.isinf(ms) or ms < 0 else ms / 1000


@dataclass(frozen=True)
class Reading:
    """One limit as one answer reports it."""

    name: str
    limit: float
    remaining: float
    reset_s: float | None


def read_limits(headers: Mapping[str, str], now: float | None = None) -> list[Reading]:
    """Every limit the headers report whole and sane (a garbled one is left out)."""
    found: list[Reading] = []
    for family in _FAMILIES:
        for name, (limit_h, remaining_h, reset_h) in family.items():
            raw_limit = headers.get(limit_h)
            raw_remaining = headers.get(remaining_h)
            if raw_limit is None or raw_remaining is None:
                continue
            limit, remaining = _count(raw_limit), _count(raw_remaining)
            if limit is None or remaining is None or limit <= 0:
                continue
            reset = parse_reset(headers.get(reset_h), now)
            found.append(Reading(name, limit, min(remaining, limit), reset))
    names = {r.name for r in found}
    if "input-tokens" in names or "output-tokens" in names:
        # Anthropic's `tokens` figures repeat whichever of those two is tightest.
        found = [r for r in found if r.name != "tokens" or not _anthropic_tokens(headers)]
    return found


def _anthropic_tokens(headers: Mapping[str, str]) -> bool:
    return headers.get(_ANTHROPIC["tokens"][0]) is not None


def _count(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value >= 0 and math.isfinite(value) else None


@dataclass(frozen=True)
class Cost:
    """What redline expects one request to spend: input tokens (from the prompt's length)
    and output tokens (the request's max_tokens)."""

    input_tokens: float
    output_tokens: float

    def of(self, limit: str) -> float:
        if limit == "requests":
            return 1.0
        if limit == "input-tokens":
            return self.input_tokens
        if limit == "output-tokens":
            return self.output_tokens
        return self.input_tokens + self.output_tokens


#: Recent requests in the order they went: (when, what each was expected to cost).
Sent = deque[tuple[float, Cost]]


class _Bucket:
    """redline's copy of one limit: spent as requests go, refilled at the rate the resets
    show, and set from the server's figure at each answer.

    The server may have counted its figure when it admitted the request (then the
    requests sent since are not in it) or when it answered: redline takes the lower of
    the two readings.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.capacity = 0.0
        self.level = 0.0
        self.stamp = 0.0
        #: Server charge / redline's estimate, learned from the answers (1 for requests).
        self.scale = 1.0
        #: The last answer's figure: when its request went, what the server had left.
        self._last: tuple[float, float] | None = None
        #: Expected and really charged over the answers since the scale was last learned.
        self._sum_expected = 0.0
        self._sum_charged = 0.0
        self._sum_requests = 0
        #: The smallest share of the limit an answer showed left (1: never drawn on).
        self.lowest_share = 1.0
        self._refills: deque[tuple[float, float]] = deque()
        self._used = 0.0
        self._span = 0.0

    @property
    def rate(self) -> float:
        """Refill per second: spent over time to reset, summed over recent answers (a
        ratio of sums, so that rounded reset times average out)."""
        if self._used > 0 and self._span > 0:
            return self._used / self._span
        return self.capacity / DEFAULT_WINDOW_S

    def now(self, at: float) -> float:
        return min(self.capacity, self.level + self.rate * max(0.0, at - self.stamp))

    def need(self, cost: Cost) -> float:
        return cost.of(self.name) * self.scale

    def reserve(self) -> float:
        return max(RESERVE * self.capacity, 1.0 if self.name == "requests" else 0.0)

    def wait_s(self, need: float, at: float) -> float:
        """Seconds until `need` (and the reserve) is there; 0 when it is now."""
        want = min(need + self.reserve(), self.capacity)
        level = self.now(at)
        if level >= want:
            return 0.0
        rate = self.rate
        return (want - level) / rate if rate > 0 else _MAX_NAP_S

    def spend(self, amount: float, at: float) -> None:
        self.level = self.now(at) - amount
        self.stamp = at

    def refund(self, amount: float, at: float) -> None:
        """A request the server refused: it was not charged."""
        self.level = self.now(at) + amount
        self.stamp = at

    def _spent_between(self, sent: Sent, after: float, until: float) -> tuple[float, int]:
        """What the requests that went in (after, until] were expected to cost, and how
        many they were."""
        total, count = 0.0, 0
        for when, cost in reversed(sent):
            if when <= after:
                break
            if when <= until:
                total += self.need(cost)
                count += 1
        return total, count

    def observe(self, reading: Reading, went: float, at: float, sent: Sent) -> None:
        """The server's figure in the answer to a request that went at `went`; `sent` is
        every recent request's (when it went, what it was expected to cost)."""
        self.capacity = reading.limit
        self.lowest_share = min(self.lowest_share, reading.remaining / reading.limit)
        used = reading.limit - reading.remaining
        if reading.reset_s is not None and reading.reset_s > 0 and used > 0:
            self._refills.append((used, reading.reset_s))
            self._used += used
            self._span += reading.reset_s
            if len(self._refills) > _RATE_SAMPLES:
                old_used, old_span = self._refills.popleft()
                self._used -= old_used
                self._span -= old_span
        rate = self.rate
        if self.name != "requests":
            self._learn_scale(reading, went, rate, sent)
        since, _ = self._spent_between(sent, went, math.inf)
        admitted = reading.remaining + rate * max(0.0, at - went) - since
        self.level = min(self.capacity, reading.remaining, admitted)
        self.stamp = at

    def _learn_scale(self, reading: Reading, went: float, rate: float, sent: Sent) -> None:
        """Between two answers' figures the server charged what it held less what it
        holds, plus the refill: against what redline expected those requests to cost,
        that is how far off its estimate is."""
        last, self._last = self._last, (went, reading.remaining)
        if last is None or went <= last[0] or reading.remaining >= self.capacity:
            return
        before, held = last
        if held >= self.capacity:
            return  # a full bucket hides what was charged
        expected, count = self._spent_between(sent, before, went)
        self._sum_expected += expected
        self._sum_requests += count
        self._sum_charged += held + rate * (went - before) - reading.remaining
        if self._sum_requests < _LEARN_REQUESTS or self._sum_expected < RESERVE * self.capacity:
            return  # too little spent yet to tell
        ratio = min(4.0, max(0.25, self._sum_charged / self._sum_expected))
        low, high = _SCALE_BOUNDS
        self.scale = min(high, max(low, self.scale * math.sqrt(ratio)))
        self._sum_expected = self._sum_charged = 0.0
        self._sum_requests = 0

    def per_minute(self) -> float:
        return self.rate * 60.0


class _Gate:
    """At most the limiter's `limit` holders; the others wait in turn."""

    def __init__(self) -> None:
        self.count = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self, limiter: RateLimiter) -> None:
        while self.count >= limiter.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self.wake(limiter)  # pass the turn it was given on
                raise
        self.count += 1

    def release(self, limiter: RateLimiter) -> None:
        self.count -= 1
        self.wake(limiter)

    def wake(self, limiter: RateLimiter) -> None:
        free = limiter.limit - self.count
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


class _Sending:
    """`RateLimiter.request()`: holds one of the limiter's sending turns (a plain context
    manager, not a generator's: every request enters one)."""

    __slots__ = ("_limiter",)

    def __init__(self, limiter: RateLimiter) -> None:
        self._limiter = limiter

    async def __aenter__(self) -> None:
        await self._limiter._sending.acquire(self._limiter)

    async def __aexit__(self, *_: object) -> None:
        self._limiter._sending.release(self._limiter)


class RateLimiter:
    """The concurrency and pacing of one provider's requests (see the module's docstring).

    Workers `acquire` a slot per sample (at most `limit` at once, and `limit` never
    above `maximum`) and `release` it; each request runs inside `request()` (at most
    `limit` of those too), each of its tries is `admit`ted before it goes and reported
    by `answered` or `throttled`.
    """

    def __init__(
        self,
        start: int,
        maximum: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.maximum = max(1, maximum)
        self.start = max(1, min(start, self.maximum))
        self.limit = self.start
        self.peak = self.start
        self.lowest = self.start
        #: Samples holding a slot, and requests on the wire: each at most `limit` (a
        #: sample's slot is kept until it ends, so after a cut the requests bound it).
        self._slots = _Gate()
        self._sending = _Gate()
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._sent: Sent = deque()
        self._paused_until = 0.0
        self._last_cut = -math.inf
        self._good_in_row = 0
        #: Requests that waited for room (pacing or a pause), and 429 answers seen.
        self.waits = 0
        self.throttles = 0
        self.waited_s = 0.0
        self._note: str | None = None
        self._latency: float | None = None
        self._last_cost: Cost | None = None

    # -- concurrency -------------------------------------------------------------------

    @property
    def in_use(self) -> int:
        """Samples holding a slot now."""
        return self._slots.count

    async def acquire(self) -> None:
        """A slot for one sample: at once while fewer than `limit` are busy."""
        await self._slots.acquire(self)

    def release(self) -> None:
        self._slots.release(self)

    def request(self) -> _Sending:
        """One request from its first try to its last (`async with`): at most `limit` at
        once, so that after a cut (a sample keeps its slot until it ends) and while a
        429's retry waits, no other request takes its turn."""
        return _Sending(self)

    def _resize(self, limit: int) -> None:
        limit = max(1, min(self.maximum, limit))
        if limit == self.limit:
            return
        self.limit = limit
        self.peak = max(self.peak, limit)
        self.lowest = min(self.lowest, limit)
        self._note = None
        self._slots.wake(self)
        self._sending.wake(self)

    # -- pacing ------------------------------------------------------------------------

    async def admit(self, cost: Cost, *, retrying: bool = False) -> float:
        """Wait until the request may go (the pause after a 429, unless `retrying` a
        request that waited it out already; room in every limit), then spend its cost;
        returns when it went (for `answered` and `throttled`)."""
        waited = False
        self._last_cost = cost
        started = at = self._clock()
        while not retrying and (wait := self._paused_until - at) > 0:
            waited = True
            await asyncio.sleep(wait)
            at = self._clock()
        while self._buckets:
            wait = max(b.wait_s(b.need(cost), at) for b in self._buckets.values())
            if wait <= 0:
                break
            waited = True
            await asyncio.sleep(min(wait, _MAX_NAP_S))
            at = self._clock()
        if waited:
            self.waits += 1
            self.waited_s += at - started
            self._note = None
        for bucket in self._buckets.values():
            bucket.spend(bucket.need(cost), at)
        sent = self._sent
        sent.append((at, cost))
        while len(sent) > _SPENDS_KEPT or sent[0][0] < at - _SPENDS_S:
            sent.popleft()
        return at

    def answered(self, headers: Mapping[str, str], went: float) -> None:
        """An answer arrived to a request that went at `went`: set each limit to the
        server's figure, and grow concurrency while every slot is busy, every limit has
        room and more in flight could still be used."""
        at = self._clock()
        took = max(0.0, at - went)
        self._latency = took if self._latency is None else 0.8 * self._latency + 0.2 * took
        readings = read_limits(headers, now=_wall(went, at))
        for reading in readings:
            bucket = self._buckets.get(reading.name)
            if bucket is None:
                bucket = self._buckets[reading.name] = _Bucket(reading.name)
                self._note = None
            bucket.observe(reading, went, at, self._sent)
        if readings:
            busy = max(self.in_use, self._sending.count) >= self.limit
            if busy and self.limit < self._useful() and self._has_room(at):
                self._resize(self.limit + 1)
        elif self.limit < self.start and at > self._paused_until:
            self._good_in_row += 1
            if self._good_in_row >= 2 * self.limit:  # one more slot per two rounds
                self._good_in_row = 0
                self._resize(self.limit + 1)

    def _has_room(self, at: float) -> bool:
        """Every limit holds more than three reserves: room for more in flight."""
        return all(b.now(at) > 3 * b.reserve() for b in self._buckets.values())

    def _useful(self) -> float:
        """The most slots the limits can keep busy: twice what the sustained rate of the
        tightest limit times the answer time needs, above the start."""
        cost, latency = self._last_cost, self._latency
        if cost is None or latency is None:
            return math.inf
        per_s = min(
            (b.rate / need if (need := b.need(cost)) > 0 else math.inf)
            for b in self._buckets.values()
        )
        return self.start + math.ceil(2 * per_s * latency)

    def throttled(
        self,
        headers: Mapping[str, str],
        cost: Cost,
        went: float,
        *,
        backoff_s: float,
        longest_s: float,
    ) -> float:
        """A 429 to a request that went at `went`; returns how long it waits before its
        retry. The request was not charged. Concurrency halves (once per burst: a 429 to a
        request sent before the last cut cuts no further) and every request pauses until
        the server says (`retry-after-ms`, `Retry-After`, else the reset of the exhausted
        limit), else for `backoff_s`; never longer than `longest_s`."""
        at = self._clock()
        self.throttles += 1
        self._note = None
        for bucket in self._buckets.values():
            bucket.refund(bucket.need(cost), at)
        for i in range(len(self._sent) - 1, -1, -1):
            if self._sent[i][0] == went:
                del self._sent[i]  # never charged
                break
        readings = read_limits(headers, now=_wall(went, at))
        for reading in readings:
            bucket = self._buckets.setdefault(reading.name, _Bucket(reading.name))
            bucket.observe(reading, went, at, self._sent)
        wait = retry_after_ms(headers.get("retry-after-ms"))
        if wait is None:
            wait = parse_retry_after(headers.get("retry-after"))
        if wait is None:
            resets = [r.reset_s for r in readings if r.reset_s is not None and r.remaining < 1]
            wait = max(resets) if resets else backoff_s
        wait = min(wait, longest_s)
        self._paused_until = max(self._paused_until, at + wait)
        if went > self._last_cut:
            self._last_cut = at
            self._good_in_row = 0
            self._resize(self.limit // 2)
        return wait

    # -- what happened -----------------------------------------------------------------

    @property
    def eventful(self) -> bool:
        """Whether there is anything to say: limits seen, waits, 429s or a changed limit."""
        return bool(self._buckets or self.waits or self.throttles or self.peak != self.start)

    def note(self) -> str:
        """One line in words: `rate limit: 3 waits, concurrency 16 → 42 (limit 500
        requests/min)`; "" when there is nothing to say."""
        if self._note is None:
            self._note = _note(self.record()) if self.eventful else ""
        return self._note

    def record(self) -> dict[str, Any]:
        """What the run keeps about its rate limit (in its recorded arguments)."""
        return {
            "start": self.start,
            "maximum": self.maximum,
            "peak": self.peak,
            "lowest": self.lowest,
            "end": self.limit,
            "waits": self.waits,
            "waited_s": round(self.waited_s, 3),
            "throttled": self.throttles,
            # The limits the run drew on: a limit barely touched shows no refill to go by.
            "limits_per_min": {
                name: round(b.per_minute())
                for name, b in sorted(self._buckets.items())
                if b.lowest_share < _DRAWN_SHARE
            },
        }


#: Each event loop's limiters by endpoint: they end with the loop that used them.
_ENDPOINTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], RateLimiter]]
_ENDPOINTS = weakref.WeakKeyDictionary()


def endpoint_limiter(base_url: str, api_key: str | None, start: int, maximum: int) -> RateLimiter:
    """The limiter of the endpoint at `base_url` called with `api_key` in the running event
    loop: made by its first caller (starting at `start`, at most `maximum`), shared by every
    later one. Outside an event loop, a limiter of its own."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return RateLimiter(start, maximum)
    key = (base_url.rstrip("/"), hashlib.sha256((api_key or "").encode()).hexdigest())
    limiters = _ENDPOINTS.setdefault(loop, {})
    limiter = limiters.get(key)
    if limiter is None:
        limiter = limiters[key] = RateLimiter(start, maximum)
    return limiter


def _wall(went: float, at: float) -> float:
    """The wall-clock time a reset given as a time is counted from: between when the
    request went (a server that counts its figures as it admits the request) and now (one
    that counts them as it answers)."""
    return time.time() - (at - went) / 2


def _note(info: Mapping[str, Any]) -> str:
    parts = []
    waits = int(info.get("waits") or 0)
    parts.append(f"{waits} wait{'' if waits == 1 else 's'}")
    throttled = int(info.get("throttled") or 0)
    if throttled:
        parts.append(f"{throttled} × HTTP 429")
    start, peak, end = info.get("start"), info.get("peak"), info.get("end")
    moves = f"concurrency {start} → {peak}"
    if end != peak:
        moves += f" → {end}"
    if peak == start and end == start:
        moves = f"concurrency {start}"
    parts.append(moves)
    limits = info.get("limits_per_min") or {}
    text = "rate limit: " + ", ".join(parts)
    if limits:
        text += " (limit " + ", ".join(f"{int(v):,} {name}/min" for name, v in limits.items()) + ")"
    return text


def rate_limit_note(info: object) -> str | None:
    """The rate-limit line of a stored run, from what it recorded (`RateLimiter.record`);
    None when it recorded nothing."""
    if not isinstance(info, dict):
        return None
    try:
        return _note(info)
    except (TypeError, ValueError):
        return None  # a record from another version, not ours to explain


__all__ = [
    "Cost",
    "RateLimiter",
    "Reading",
    "endpoint_limiter",
    "parse_reset",
    "rate_limit_note",
    "read_limits",
    "retry_after_ms",
]
