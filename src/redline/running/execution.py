"""Drawing a run's samples: workers under one concurrency bound, one writer committing.

All samples of a run share one concurrency bound (`--concurrency`, capped further by the
provider, e.g. the local model's 1). The samples that finish in one turn of the event loop
are committed together at the end of it (or, while the batch before them is being
committed, as soon as that commit returns), and none is counted (progress, schedule,
budget) before its commit returns, so an interrupt loses nothing finished and a crash only
the samples in flight or finished since the last commit began.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from redline.providers.base import in_flight, ride_rate_limit
from redline.running.budget import Budget
from redline.running.options import RunOptions
from redline.running.pipeline import ProviderDown, SampleJob, SamplePipeline
from redline.running.planning import Plan
from redline.running.schedule import Schedule
from redline.vocabulary.records import SampleRecord
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.config import Config
    from redline.providers.base import Provider
    from redline.providers.ratelimit import RateLimiter


@dataclass(frozen=True)
class RunProgress:
    """A snapshot after each stored sample, for progress bars and the TUI."""

    run_id: str
    total: int
    done: int
    verdicts: Mapping[Verdict, int]
    elapsed_s: float
    last: SampleRecord | None = None
    #: Set once, when the run is being interrupted: no more samples will finish.
    stopping: bool = False
    #: The cases with a sample in flight now (`suite/case`), oldest request first.
    running: tuple[str, ...] = ()
    #: `total` is the most the run may draw: sequentially sampled cases stop once decided
    #: (and `total` shrinks as they do).
    up_to: bool = False
    #: Where the run's batch stands (`--batch`): `batch abc in progress 120/500 (...)`.
    batch: str = ""
    #: What riding the provider's rate limit did so far, in words ("" when nothing).
    rate_limit: str = ""

    @property
    def rate(self) -> float:
        """Samples per second observed so far."""
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the observed rate (at most, with `up_to`); None before the
        first sample finished."""
        if self.done == 0 or self.elapsed_s <= 0:
            return None
        return max(0.0, (self.total - self.done) / self.rate)


ProgressCallback = Callable[[RunProgress], None]


class SampleSink(Protocol):
    """Where committed samples go: the run store, or a pytest item's list."""

    def add_samples(self, samples: Iterable[SampleRecord]) -> None: ...


class Tally:
    """What the run has counted so far, reported to the progress callback."""

    def __init__(
        self, run_id: str, jobs: Schedule, progress: ProgressCallback | None, started: float
    ) -> None:
        self.run_id = run_id
        self.jobs = jobs
        self.up_to = bool(jobs.sequential)
        self.done = 0
        self.counts: dict[Verdict, int] = dict.fromkeys(Verdict, 0)
        self.progress = progress
        self.started = started
        #: `suite/case` → samples of it in flight (insertion order: oldest first).
        self.running: dict[str, int] = {}
        self.batch = ""
        #: The provider's rate limiter, when the run rides one.
        self.limiter: RateLimiter | None = None

    def batch_state(self, text: str) -> None:
        """The run's batch changed state (submitted, counts, ended): report it."""
        if text != self.batch:
            self.batch = text
            self.report()

    def start(self, job: SampleJob) -> None:
        name = f"{job.case.suite}/{job.case.id}"
        self.running[name] = self.running.get(name, 0) + 1
        self.report()

    def record(self, sample: SampleRecord) -> None:
        name = f"{sample.suite}/{sample.case_id}"
        left = self.running.get(name, 1) - 1
        if left > 0:
            self.running[name] = left
        else:
            self.running.pop(name, None)
        self.done += 1
        self.counts[sample.verdict] += 1
        self.report(sample)

    def report(self, last: SampleRecord | None = None, *, stopping: bool = False) -> None:
        if self.progress is not None:
            self.progress(
                RunProgress(
                    run_id=self.run_id,
                    total=self.jobs.most,
                    done=self.done,
                    verdicts=dict(self.counts),
                    elapsed_s=time.monotonic() - self.started,
                    last=last,
                    stopping=stopping,
                    running=tuple(self.running),
                    up_to=self.up_to,
                    batch=self.batch,
                    rate_limit=self.limiter.note() if self.limiter is not None else "",
                )
            )


#: The smallest batch `Commits` hands to a thread (`off_loop`).
OFF_LOOP_BATCH = 4


class Commits:
    """Finished samples on their way to the sink: committed in batches, each sample
    counted as done (progress, schedule, budget) only once its commit returned.

    A batch holds what finished before the writer's next turn of the event loop (samples
    whose answers arrived together): one commit instead of one per sample, no worker
    waits for it, and no finished sample waits on a timer, so a kill loses no more than
    committing each sample on its own would. With a budget each sample is committed on
    arrival, so it settles its cost before its worker asks the budget for the next sample.
    `off_loop` commits each batch of `OFF_LOOP_BATCH` samples or more on a thread (the
    run store: SQLite lets go of the interpreter while it writes), so the workers go on
    drawing meanwhile (a smaller batch costs less to write than to hand over); a batch being
    committed when the run is stopped is counted once its commit returned, before the
    stop goes on.
    """

    def __init__(
        self, sink: SampleSink, tally: Tally, budget: Budget | None, *, off_loop: bool = False
    ) -> None:
        self.sink = sink
        self.jobs = tally.jobs
        self.tally = tally
        self.budget = budget
        self.off_loop = off_loop and budget is None
        self.pending: list[tuple[SampleJob, SampleRecord, float]] = []
        #: Workers still drawing: the writer stops when none is left.
        self.workers = 0
        self._wake = asyncio.Event()

    def add(self, job: SampleJob, sample: SampleRecord, reserved: float) -> None:
        self.pending.append((job, sample, reserved))
        if self.budget is not None:
            self.flush()
        else:
            self._wake.set()

    def worker_done(self) -> None:
        self.workers -= 1
        self._wake.set()

    async def write(self) -> None:
        """Commit the batches until every worker has stopped."""
        while self.workers > 0 or self.pending:
            await self._wake.wait()
            if self.pending:
                await asyncio.sleep(0)  # one loop turn: answers that arrived with it
            self._wake.clear()
            if self.off_loop and len(self.pending) >= OFF_LOOP_BATCH:
                await self._commit_off_loop()
            else:
                self.flush()

    async def _commit_off_loop(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        samples = [sample for _, sample, _ in batch]
        committing = asyncio.ensure_future(asyncio.to_thread(self.sink.add_samples, samples))
        try:
            await asyncio.shield(committing)
        except asyncio.CancelledError:
            await asyncio.wait([committing])  # the commit ends before the stop goes on
            if committing.exception() is None:
                self._count(batch)
            raise
        self._count(batch)

    def flush(self) -> None:
        """Commit the pending samples, then count them (progress, schedule, budget)."""
        batch, self.pending = self.pending, []
        if not batch:
            return
        self.sink.add_samples(sample for _, sample, _ in batch)
        self._count(batch)

    def _count(self, batch: list[tuple[SampleJob, SampleRecord, float]]) -> None:
        for job, sample, reserved in batch:
            if self.budget is not None:
                self.budget.settle(sample.suite, sample.case_id, sample.cost, reserved)
            self.jobs.done(job, sample.verdict)
            self.tally.record(sample)


def concurrency(options: RunOptions, config: Config, provider: Provider, plan: Plan) -> int:
    """Workers for this run: `--concurrency` or the configured one, capped by the
    provider's own limit and by the samples there are to draw. A provider that rides its
    rate limit gets its limiter here, starting at that number: then there are as many
    workers as it may grow to (it holds all but its current limit back)."""
    limit = in_flight(provider, options.concurrency or config.concurrency)
    limiter = ride_rate_limit(provider, limit)
    if limiter is not None:
        limit = limiter.maximum
    return max(1, min(limit, max(len(plan.todo), len(plan.sequential)) or 1))


def rate_limiter(provider: Provider) -> RateLimiter | None:
    return cast("RateLimiter | None", getattr(provider, "rate_limiter", None))


async def draw_samples(
    limit: int, pipeline: SamplePipeline, commits: Commits, budget: Budget | None = None
) -> None:
    """Draw every scheduled sample with `limit` workers and one writer committing what
    they finish; on any exception (Ctrl-C included) store what finished, stop them all,
    say so, and let it propagate."""
    commits.tally.limiter = rate_limiter(pipeline.provider)
    commits.tally.report()
    commits.workers = limit
    tasks = [asyncio.ensure_future(_worker(pipeline, commits, budget)) for _ in range(limit)]
    tasks.append(asyncio.ensure_future(commits.write()))
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        try:
            commits.flush()
        finally:
            commits.tally.report(stopping=True)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _worker(pipeline: SamplePipeline, commits: Commits, budget: Budget | None) -> None:
    """Draw samples until the schedule is empty; each finished one goes to `commits`.
    With a rate limiter, a worker draws while it holds one of its slots, and gives it
    back when the limit comes down."""
    limiter = rate_limiter(pipeline.provider)
    try:
        if limiter is None:
            await _draw(pipeline, commits, budget)
            return
        while True:
            await limiter.acquire()
            # An exception ends the run: the slot is not handed on to a waiting worker.
            while await _draw(pipeline, commits, budget, once=True):
                if limiter.in_use > limiter.limit:
                    break  # the limit came down: give this slot back
            else:
                limiter.release()
                return
            limiter.release()
    finally:
        commits.worker_done()


async def _draw(
    pipeline: SamplePipeline, commits: Commits, budget: Budget | None, *, once: bool = False
) -> bool:
    """Draw samples until the schedule is empty (or one, with `once`); False when the
    worker is to stop."""
    jobs = commits.jobs
    while (job := await jobs.next()) is not None:
        if pipeline.down is not None:
            jobs.dropped()
            return False
        reserved = 0.0
        if budget is not None:
            admitted = budget.admit(job.case.suite, job.case.id)
            if admitted is None:
                jobs.dropped()
                return False
            reserved = admitted
        try:
            commits.tally.start(job)
            sample = await pipeline.draw(job)
        except ProviderDown:
            jobs.dropped()
            return False
        except BaseException:
            jobs.in_flight -= 1
            raise
        commits.add(job, sample, reserved)
        if once:
            return True
    return False


__all__ = [
    "Commits",
    "ProgressCallback",
    "RunProgress",
    "SampleSink",
    "Tally",
    "concurrency",
    "draw_samples",
    "rate_limiter",
    "ride_rate_limit",
]
