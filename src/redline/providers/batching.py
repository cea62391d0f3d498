"""A run's requests through the provider's batch API, in rounds, at the batch price.

`BatchProvider` stands in for an HTTP provider: `complete` does not send the request but
holds it until every sample the run has in flight is waiting for an answer (a round),
then the round goes out as one batch (`BatchApi`: OpenAI's Batch API, Anthropic's Message
Batches), is polled until it ends, and each request's answer is read from the results
exactly as the provider's own answer would be (same parser, same verdicts), priced with
the price table's batch discount. A sequentially sampled case therefore plays as rounds:
the samples its rule still needs after one batch go in the next.

Every batch is recorded in the run store (its id and the custom ids of its requests)
before anything waits on it, so a process that ends while a batch is pending loses
nothing: `redline run --resume` finds each request in the batch that holds it and
collects its answer there (a request is never sent twice, a batch never submitted
twice); only the requests an ended batch never answered (expired, cancelled) go out
again, in a new batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from redline.errors import (
    BatchApiMissing,
    BatchPending,
    BatchUnfinished,
    CredentialsRejected,
    EndpointUnreachable,
)
from redline.httpio import HttpAnswer, HttpFailure
from redline.providers.base import REFUSAL_STOPS
from redline.vocabulary.completion import BATCH_KEY
from redline.vocabulary.records import BatchRecord

if TYPE_CHECKING:
    from redline.config import Price
    from redline.providers.http_provider import HttpProvider
    from redline.vocabulary.completion import ChatRequest, Completion

#: How long the round waits for in-flight samples to reach it before a batch goes out.
ROUND_SETTLE_S = 0.02
#: Polls in a row that may fail (transport, 5xx) before the run stops waiting.
POLL_FAILURES = 5


@dataclass(frozen=True)
class BatchStatus:
    """Where one batch stands, as the provider said it last."""

    id: str
    #: The provider's own word (`validating`, `in_progress`, `ended`...).
    status: str
    ended: bool
    #: The provider's request counts, in its own words.
    counts: Mapping[str, int]
    #: Requests answered so far (succeeded or errored) and in all.
    done: int
    total: int
    #: Where the results are: OpenAI's output and error file ids, Anthropic's results_url.
    results: tuple[str, ...] = ()
    #: Why the whole batch failed (OpenAI `failed`: its validation errors), else None.
    failure: str | None = None

    def describe(self) -> str:
        """`batch abc in progress 120/500 (completed 118, failed 2)`: for progress lines."""
        shown = ", ".join(
            f"{name} {n}" for name, n in self.counts.items() if n and name not in _NOT_SHOWN
        )
        text = f"batch {self.id} {self.status.replace('_', ' ')} {self.done}/{self.total}"
        return f"{text} ({shown})" if shown else text


#: Counts a progress line leaves out: what `done/total` says already.
_NOT_SHOWN = frozenset({"total", "processing"})


@dataclass(frozen=True)
class LineResult:
    """One request's result in a batch: its answer body, or why there is none."""

    #: The answer body, as the provider's own endpoint would have answered.
    body: Any = None
    #: Why the provider failed the request (`rate limited (HTTP 429): ...`).
    error: str | None = None
    #: The request never ran: `expired` or `cancelled` with its batch.
    unfinished: str | None = None


class BatchApi(Protocol):
    """One provider's batch API: submit requests, look at a batch, read its results, cancel
    it."""

    #: What the API is called in messages ("OpenAI's Batch API").
    name: str
    #: The most requests and bytes one batch may hold.
    max_requests: int
    max_bytes: int

    def line(self, custom_id: str, payload: Mapping[str, Any]) -> bytes:
        """One request as the batch carries it (a JSON object, no newline)."""
        ...

    async def submit(self, lines: Sequence[bytes]) -> BatchStatus: ...

    async def status(self, batch_id: str) -> BatchStatus: ...

    async def results(self, status: BatchStatus) -> dict[str, LineResult]: ...

    async def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to stop the batch: what it answered stays (and is billed), the
        rest never runs. It ends a little later (`cancelling`, then `cancelled`)."""
        ...


class BatchLedger(Protocol):
    """Where a run's batches are recorded (the run store)."""

    def add_batch(self, batch: BatchRecord) -> None: ...

    def update_batch(
        self, run_id: str, batch_id: str, status: str, counts: Mapping[str, int], *, ended: bool
    ) -> None: ...

    def batches(self, run_id: str) -> list[BatchRecord]: ...


def custom_id(request: ChatRequest) -> str:
    """The request's id in a batch: the same for the same request of the same sample in
    any process (suite, case, sample index, tool-loop step), within every provider's
    rules (letters, digits, `_` and `-`, at most 64 characters)."""
    if request.sample is not None:
        suite, case, index = request.sample
        key = f"{suite}\0{case}\0{index}\0{request.step}"
    else:
        key = json.dumps([request.model, request.system, request.user, request.seed])
    return "rl-" + hashlib.sha256(key.encode()).hexdigest()[:40]


@dataclass
class _Waiting:
    """One request held for a batch, and the worker waiting for its answer."""

    custom_id: str
    request: ChatRequest
    answer: asyncio.Future[Completion]


@dataclass
class _Batch:
    """A batch this process watches: submitted here, or found in the run store."""

    status: BatchStatus
    requests: frozenset[str]
    #: Submitted by this process (an unanswered request is then the run's end, not a
    #: request to send again).
    own: bool
    #: Its status was read in this process (a recorded one's is, once: where its results
    #: are is not recorded).
    seen: bool = False
    waiting: list[_Waiting] = field(default_factory=list)
    results: dict[str, LineResult] | None = None
    watcher: asyncio.Task[None] | None = None


class BatchProvider:
    """The provider of a run sent through a batch API (see the module docstring).

    `in_flight` says how many samples the run is drawing now (the schedule's count): a
    round goes out once every one of them waits here. `wait_s` bounds how long this
    process waits for a batch (0: submit and end, `--no-wait`); past it, every waiting
    sample ends with `BatchPending` and the batches stay recorded for `--resume`.
    `reuse_failures`: a request a recorded batch failed is answered by that failure
    (False for `--retry-transport`, which sends them again). `fallback`
    (`--batch-if-supported`): when the server turns out to have no batch API (404 at its
    address, an OpenAI-compatible server that is not OpenAI), the run goes on without
    batches, at the regular price.
    """

    max_parallel: int | None = None

    def __init__(
        self,
        inner: HttpProvider,
        api: BatchApi,
        *,
        run_id: str,
        ledger: BatchLedger,
        poll_s: float,
        wait_s: float | None = None,
        reuse_failures: bool = True,
        fallback: bool = False,
        direct_limit: int = 16,
        on_state: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.api = api
        self.run_id = run_id
        self.ledger = ledger
        self.poll_s = poll_s
        self.deadline = None if wait_s is None else time.monotonic() + wait_s
        self.reuse_failures = reuse_failures
        self.fallback = fallback
        #: The server has no batch API and `fallback` allowed it: requests go out one by one.
        self.direct = False
        #: Requests in flight at once once they go out one by one: the run's concurrency.
        self._slots = asyncio.Semaphore(direct_limit)
        self.on_state = on_state
        self.in_flight: Callable[[], int] = lambda: 0
        base = inner.price
        self.price: Price | None = None if base is None else base.batched()
        self._queue: list[_Waiting] = []
        self._batches: dict[str, _Batch] = {}
        #: custom id → the batch that holds it (the latest, when several did).
        self._holder: dict[str, str] = {}
        for record in ledger.batches(run_id):
            status = BatchStatus(
                record.batch_id,
                record.status,
                record.ended,
                dict(record.counts),
                0,
                len(record.requests),
            )
            self._batches[record.batch_id] = _Batch(status, frozenset(record.requests), own=False)
            for request_id in record.requests:
                self._holder[request_id] = record.batch_id
        self._round: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def identity(self) -> str:
        return self.inner.identity()

    async def aclose(self) -> None:
        """Stop watching (the batches stay recorded); the inner provider is its owner's."""
        tasks = [b.watcher for b in self._batches.values() if b.watcher is not None]
        if self._round is not None:
            tasks.append(self._round)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def complete(self, request: ChatRequest) -> Completion:
        if self.direct:
            return await self._one_by_one(request)
        waiting = _Waiting(custom_id(request), request, asyncio.get_running_loop().create_future())
        holder = self._batches.get(self._holder.get(waiting.custom_id, ""))
        if holder is not None and not holder.own:
            self._attach(holder, waiting)
        else:
            self._enqueue(waiting)
        return await waiting.answer

    # -- rounds ---------------------------------------------------------------------------

    def _enqueue(self, waiting: _Waiting) -> None:
        self._queue.append(waiting)
        if self._round is None:
            self._round = asyncio.ensure_future(self._rounds())
        self._wake.set()

    def _waiting(self) -> int:
        return len(self._queue) + sum(len(b.waiting) for b in self._batches.values())

    async def _rounds(self) -> None:
        """Send each round once every sample in flight waits for its answer; a round that
        cannot be sent ends each of its samples with the reason."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(ROUND_SETTLE_S)  # samples woken with this one reach it too
            while self._queue and self._waiting() < self.in_flight():
                await asyncio.sleep(ROUND_SETTLE_S)
            if not self._queue:
                continue
            round_, self._queue = self._queue, []
            try:
                await self._submit(round_)
            except BatchApiMissing as exc:
                if not (self.fallback and not self._batches):
                    _fail(round_, exc)
                    continue
                self.direct = True
                self._say(f"no batch API here ({exc.reason}): requests go out one by one")
                await asyncio.gather(*(self._answer_directly(w) for w in round_))
            except Exception as exc:
                _fail(round_, exc)

    async def _answer_directly(self, waiting: _Waiting) -> None:
        try:
            waiting.answer.set_result(await self._one_by_one(waiting.request))
        except Exception as exc:
            waiting.answer.set_exception(exc)

    async def _one_by_one(self, request: ChatRequest) -> Completion:
        async with self._slots:
            return await self.inner.complete(request)

    async def _submit(self, round_: list[_Waiting]) -> None:
        for chunk in self._chunks(round_):
            lines = [self.api.line(w.custom_id, self.inner.payload(w.request)) for w in chunk]
            try:
                status = await self.api.submit(lines)
            except BatchCallFailed as exc:
                raise EndpointUnreachable(
                    f"could not submit a batch to {self.api.name} ({exc}); nothing of it was sent"
                ) from None
            requests = tuple(w.custom_id for w in chunk)
            self.ledger.add_batch(
                BatchRecord(
                    run_id=self.run_id,
                    batch_id=status.id,
                    provider=self.inner.config.name,
                    status=status.status,
                    requests=requests,
                    counts=dict(status.counts),
                    ended=status.ended,
                )
            )
            status = dataclasses.replace(status, total=max(status.total, len(requests)))
            batch = _Batch(status, frozenset(requests), own=True, seen=True)
            self._batches[status.id] = batch
            for w in chunk:
                self._holder[w.custom_id] = status.id
                self._attach(batch, w)
            self._say(f"submitted {status.describe()}")

    def _chunks(self, round_: list[_Waiting]) -> list[list[_Waiting]]:
        """The round cut into batches the API takes (requests and bytes per batch)."""
        chunks: list[list[_Waiting]] = [[]]
        size = 0
        for w in round_:
            length = len(json.dumps(self.inner.payload(w.request))) + 200
            if chunks[-1] and (
                len(chunks[-1]) >= self.api.max_requests or size + length > self.api.max_bytes
            ):
                chunks.append([])
                size = 0
            chunks[-1].append(w)
            size += length
        return [c for c in chunks if c]

    # -- watching a batch -----------------------------------------------------------------

    def _attach(self, batch: _Batch, waiting: _Waiting) -> None:
        batch.waiting.append(waiting)
        if batch.watcher is None or batch.watcher.done():
            batch.watcher = asyncio.ensure_future(self._watch(batch))

    async def _watch(self, batch: _Batch) -> None:
        try:
            await self._until_ended(batch)
            if batch.results is None:
                batch.results = await self.api.results(batch.status)
            await self._answer(batch)
        except Exception as exc:
            waiting, batch.waiting = batch.waiting, []
            for w in waiting:
                if not w.answer.done():
                    w.answer.set_exception(exc)

    async def _until_ended(self, batch: _Batch) -> None:
        failures = 0
        first = True
        while not batch.seen or not batch.status.ended:
            if not first:
                self._say(batch.status.describe())
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    raise self._pending()
                await asyncio.sleep(self.poll_s)
            first = False
            try:
                status = await self.api.status(batch.status.id)
            except BatchCallFailed as exc:
                failures += 1
                if failures >= POLL_FAILURES:
                    raise BatchPending(
                        f"could not look at batch {batch.status.id} ({exc}); it stays "
                        f"recorded: collect it with `redline run --resume {self.run_id}`",
                        run_id=self.run_id,
                    ) from None
                continue
            failures = 0
            batch.seen = True
            # Some APIs count no requests while validating them: the batch holds its own.
            status = dataclasses.replace(status, total=max(status.total, len(batch.requests)))
            changed = status.status != batch.status.status or status.counts != batch.status.counts
            batch.status = status
            if changed:
                self.ledger.update_batch(
                    self.run_id, status.id, status.status, status.counts, ended=status.ended
                )
        self._say(batch.status.describe())

    async def _answer(self, batch: _Batch) -> None:
        """Every waiting sample's answer from the ended batch's results; those it never
        answered end the run (this process's batch) or go out again (a recorded one)."""
        assert batch.results is not None
        unanswered: list[_Waiting] = []
        waiting, batch.waiting = batch.waiting, []
        for w in waiting:
            result = batch.results.get(w.custom_id)
            if result is not None and result.body is not None:
                answer = self.inner.answer_of(w.request, result.body, price=self.price)
                answer.extra[BATCH_KEY] = batch.status.id
                w.answer.set_result(answer)
            elif (
                result is not None
                and result.error is not None
                and (batch.own or self.reuse_failures)
            ):
                failed = self.inner.failed(f"{result.error} (batch {batch.status.id})")
                failed.extra[BATCH_KEY] = batch.status.id
                w.answer.set_result(failed)
            elif batch.own:
                unanswered.append(w)
            else:
                self._enqueue(w)  # a recorded batch never ran it: send it again
        if unanswered:
            await self._let_answered_settle(len(unanswered))
            error = self._unfinished(batch, unanswered)
            for w in unanswered:
                w.answer.set_exception(error)

    async def _let_answered_settle(self, unanswered: int, limit_s: float = 10.0) -> None:
        """Wait (briefly) until the answered samples are stored before the run ends."""
        until = time.monotonic() + limit_s
        while self.in_flight() > unanswered and time.monotonic() < until:
            await asyncio.sleep(ROUND_SETTLE_S)

    def _unfinished(self, batch: _Batch, unanswered: list[_Waiting]) -> BatchUnfinished:
        status = batch.status
        results = batch.results or {}
        # Missing from the results of an expired or cancelled batch: it never ran either.
        missing = status.status if status.status in ("expired", "cancelled") else "not answered"
        reasons = Counter(
            (results[w.custom_id].unfinished if w.custom_id in results else None) or missing
            for w in unanswered
        )
        said = ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
        why = status.failure or f"the batch is {status.status.replace('_', ' ')} ({said})"
        return BatchUnfinished(
            f"batch {status.id} left {len(unanswered)} of its {len(batch.requests)} requests "
            f"unanswered: {why}. The answered samples are stored; send the rest in a new "
            f"batch with `redline run --resume {self.run_id}`",
            run_id=self.run_id,
        )

    def _pending(self) -> BatchPending:
        named = ", ".join(
            f"batch {b.status.id} is {b.status.status.replace('_', ' ')} "
            f"({b.status.done}/{b.status.total})"
            for b in self._batches.values()
            if not b.status.ended
        )
        return BatchPending(
            f"{named}; collect it with `redline run --resume {self.run_id}`",
            run_id=self.run_id,
        )

    def _say(self, text: str) -> None:
        if self.on_state is not None:
            self.on_state(text)


def _fail(waiting: list[_Waiting], error: BaseException) -> None:
    for w in waiting:
        if not w.answer.done():
            w.answer.set_exception(error)


@dataclass(frozen=True)
class Cancelled:
    """One pending batch of a run after `cancel_pending`: where the provider says it stands
    now, or why it could not be asked."""

    batch: BatchRecord
    status: BatchStatus | None
    #: Whether the provider was asked to cancel it (no: it had ended meanwhile).
    asked: bool = False
    error: str = ""


async def cancel_pending(
    run_id: str, ledger: BatchLedger, api_for: Callable[[str], BatchApi]
) -> list[Cancelled]:
    """Cancel every batch of run `run_id` the ledger has not seen end, on the batch API
    `api_for` gives for its provider table; a batch that ended meanwhile is only recorded
    as it ended. The ledger keeps what each provider answered."""
    found: list[Cancelled] = []
    for record in ledger.batches(run_id):
        if record.ended:
            continue
        api = api_for(record.provider)
        asked = False
        try:
            status = await api.status(record.batch_id)
            if not status.ended:
                asked = True
                status = await api.cancel(record.batch_id)
        except BatchCallFailed as exc:
            found.append(Cancelled(record, None, asked, str(exc)))
            continue
        ledger.update_batch(run_id, status.id, status.status, status.counts, ended=status.ended)
        found.append(Cancelled(record, status, asked))
    return found


class BatchCallFailed(Exception):
    """A batch API call that failed after its retries (transport, 5xx, 429)."""


class BatchCalls:
    """The HTTP calls of a batch API: the provider's client and key, its retry policy;
    401/403 stop the run as a refused key does, an account or model the provider refuses
    as it does without batches, 404/405 as a missing endpoint does."""

    def __init__(self, provider: HttpProvider, api_name: str) -> None:
        self.provider = provider
        self.api_name = api_name
        self._rng = random.Random()

    async def json(self, method: str, url: str, **sent: Any) -> Any:
        """The JSON answer of `call(method, url, **sent)`."""
        answer = await self.call(method, url, **sent)
        try:
            return json.loads(answer.body)
        except ValueError:
            raise BatchCallFailed(f"{self._what(method, url)}: the answer is not JSON") from None

    async def call(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        large: bool = False,
    ) -> HttpAnswer:
        provider = self.provider
        client = provider.client
        content = raw if body is None else json.dumps(body, ensure_ascii=False).encode()
        sent = {**provider.headers(), **(headers or {})}
        policy = None
        if large:
            policy = dataclasses.replace(
                client.policy,
                timeout_s=max(client.policy.timeout_s, 600.0),
                max_response_bytes=max(client.policy.max_response_bytes, 1024**3),
            )
        retry = provider.policy
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            try:
                answer = await client.request(
                    method, url, body=content, headers=sent, policy=policy
                )
            except HttpFailure as exc:
                failure = f"transport error: {exc}"
            else:
                if 200 <= answer.status < 300:
                    return answer
                failure = f"HTTP {answer.status}: {_message(answer)}"
                refused = provider.refusal_in(answer.status, answer.body)
                if refused is not None:
                    raise REFUSAL_STOPS[refused[0]](f"{self.api_name}: {refused[1]}")
                if answer.status in (401, 403):
                    variable = provider.config.api_key_env or "the API key variable"
                    raise CredentialsRejected(
                        f"{self.api_name} refused the credentials ({failure}); check the key "
                        f"in ${variable}"
                    )
                if answer.status in (404, 405):
                    raise BatchApiMissing(
                        f"{self.api_name} is not at {client.redact(url)} ({failure}): the "
                        f"server of provider {provider.config.name!r} may have no batch API; "
                        "run without --batch"
                    )
                if answer.status == 429:
                    wait = retry.retry_after_s(answer.headers.get("retry-after"))
                elif answer.status < 500:
                    raise EndpointUnreachable(
                        f"{self.api_name} refused {self._what(method, url)} ({failure})"
                    )
            if attempt > retry.max_retries:
                raise BatchCallFailed(f"{self._what(method, url)}: {failure}")
            await asyncio.sleep(wait if wait is not None else retry.backoff_s(attempt, self._rng))

    def _what(self, method: str, url: str) -> str:
        return f"{method} {self.provider.client.redact(url)}"


def _message(answer: HttpAnswer) -> str:
    """The error message an API's error body carries, else the start of the body."""
    try:
        data = json.loads(answer.body)
    except ValueError:
        return answer.text()[:300]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return answer.text()[:300]


def error_class(status: int) -> str:
    """A failed request's class in words, from its HTTP status."""
    if status == 429:
        return "rate limited"
    if status in (401, 403):
        return "credentials refused"
    if 400 <= status < 500:
        return "invalid request"
    return "server error"


def read_results(
    raw: bytes, read: Callable[[Any], tuple[str, LineResult] | None]
) -> dict[str, LineResult]:
    """custom id → result, from a JSONL results body read line by line with `read` (a blank
    or broken line is skipped: the request it held counts as unanswered)."""
    found: dict[str, LineResult] = {}
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        result = read(value)
        if result is not None:
            found[result[0]] = result[1]
    return found


__all__ = [
    "BatchApi",
    "BatchCallFailed",
    "BatchCalls",
    "BatchLedger",
    "BatchProvider",
    "BatchStatus",
    "LineResult",
    "custom_id",
    "error_class",
    "read_results",
]
