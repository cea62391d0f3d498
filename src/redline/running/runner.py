"""Run every case N times against one pinned model, judge each sample, keep every output.

The entry points: `execute_run` (and `run_suites` for synchronous callers) and
`estimate_run`. A run is planned (`running.planning`: which cases, how many samples,
what a resume still lacks), drawn (`running.schedule` hands the samples out,
`running.execution` draws and commits them as they finish) and recorded
(`running.run_record`: opened, each case's result, closed). Each sample goes through
`running.pipeline` (ask the provider, check, judge, record), whatever answers it: the
pinned model, or for a replay the stored run it re-scores. `resume` draws just the
missing (case, index) samples into the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from redline.config import Config, ModelRef
from redline.errors import RedlineError, RunStopped, StoreFull
from redline.providers.factory import batch_provider, batch_wanted, make_provider
from redline.redaction import KeyRedactor
from redline.running.budget import Budget, Estimate, estimate_cost
from redline.running.execution import (
    Commits,
    ProgressCallback,
    RunProgress,
    Tally,
    concurrency,
    draw_samples,
    rate_limiter,
)
from redline.running.options import RunOptions, resume_options
from redline.running.pipeline import SamplePipeline, refuse_unsupported
from redline.running.planning import (
    plan_run,
    planned_samples,
    run_model,
    samples_for,
    sampling_plan,
    select_cases,
)
from redline.running.replay import ReplayProvider
from redline.running.run_record import (
    RETRIES_ARG,
    CaseInputs,
    case_result,
    finish_run,
    open_record,
    run_manifest,
)
from redline.running.schedule import Schedule
from redline.running.seeds import sample_seed
from redline.running.store import HEARTBEAT_S, RunStore, new_run_id
from redline.targets.factory import make_target, suites_target
from redline.vocabulary.records import RunKind, RunRecord

#: The most samples a batch run draws at once (a round bigger than this takes two): OpenAI's
#: limit of requests per batch.
BATCH_WORKERS = 50_000

if TYPE_CHECKING:
    from redline.providers.base import Provider
    from redline.suite.cases import Suite


def estimate_run(
    suites: Sequence[Suite], config: Config, store: RunStore | None, options: RunOptions
) -> Estimate:
    """The estimate for a run (or rerun, or resume) as `execute_run` would plan it: the one
    function the CLI and the triage app call before spending money."""
    model = run_model(suites, config, options)
    planned = planned_samples(suites, store, options)
    batched = options.replay is None and _batched(suites, config, options, model)
    return estimate_cost(store, config, model.id, planned, batched=batched)


def _batched(suites: Sequence[Suite], config: Config, options: RunOptions, model: ModelRef) -> bool:
    """Whether the run goes through the provider's batch API (see `batch_wanted`)."""
    return batch_wanted(
        model,
        config,
        asked=options.batch,
        if_supported=options.batch_if_supported,
        target=suites_target(suites) is not None,
    )


async def execute_run(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    progress: ProgressCallback | None = None,
    provider: Provider | None = None,
) -> RunRecord:
    """Run (or resume, or replay) and return the stored run record.

    Each request is answered by `provider` when given, else by the stored run a replay
    re-scores, else by the pinned model; all go through the same pipeline. Raises
    `UsageError`/`ConfigError` before any model call when the run cannot start. On
    cancellation (Ctrl-C) the finished samples are already stored, case results are
    written for what is there, the run is marked `interrupted`, and the cancel propagates.
    """
    model: ModelRef | None = None
    owned = provider is None
    if options.replay is not None:
        replay = ReplayProvider(store, options.replay)
        parent = replay.parent_id
        options = replace(options, kind=RunKind.REPLAY, replay=parent, parent_id=parent)
        provider = provider or replay
    else:
        model = run_model(suites, config, options)
        target = suites_target(suites)
        if provider is None and target is not None:
            provider = make_target(target, model, options.concurrency or config.concurrency)
        provider = provider or make_provider(model, config, os.environ)
    try:
        return await _execute(suites, config, store, options, progress, provider, model)
    finally:
        if owned:
            await provider.aclose()


def run_suites(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    progress: ProgressCallback | None = None,
    provider: Provider | None = None,
) -> RunRecord:
    """`execute_run` for synchronous callers; Ctrl-C raises KeyboardInterrupt after cleanup."""
    with _fewer_collections():
        return asyncio.run(execute_run(suites, config, store, options, progress, provider))


#: A run's cycle collector: every this many new objects (Python's default is 700).
RUN_COLLECTION_THRESHOLD = 10_000
_collections_lock = threading.Lock()
#: How many runs are under way in this process, and the settings to restore after the last
#: ends: the threshold, and whether the run froze what lived before it.
_runs = 0
_before: tuple[tuple[int, int, int], bool] = ((0, 0, 0), False)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Python's cycle collector, less often and out of the way of what lived before the
    run. A sample makes and frees (by reference count) a few hundred objects, so the
    default collection every 700 new objects ran ~190 times in a 2,000-sample run,
    traversing the young answers, tasks and rows each time, plus one full collection over
    every loaded case and module: a tenth of the run's CPU. The objects alive at the start
    are frozen (`gc.freeze`) and the threshold raised for the run; both are restored after
    the last run in this process ends (objects someone else froze are left frozen)."""
    global _runs, _before
    with _collections_lock:
        if _runs == 0:
            threshold = gc.get_threshold()
            freeze = gc.get_freeze_count() == 0
            if freeze:
                gc.freeze()
            gc.set_threshold(max(threshold[0], RUN_COLLECTION_THRESHOLD), *threshold[1:])
            _before = (threshold, freeze)
        _runs += 1
    try:
        yield
    finally:
        with _collections_lock:
            _runs -= 1
            if _runs == 0:
                threshold, freeze = _before
                gc.set_threshold(*threshold)
                if freeze:
                    gc.unfreeze()


async def _execute(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    progress: ProgressCallback | None,
    provider: Provider,
    model: ModelRef | None,
) -> RunRecord:
    chosen = select_cases(suites, options)
    refuse_unsupported(provider, chosen, model.name if model is not None else "")
    batched = (
        model is not None and options.replay is None and _batched(suites, config, options, model)
    )
    options = replace(options, batch=True if batched else None)
    identity = provider.identity()
    run_id = options.resume if options.resume is not None else options.run_id or new_run_id()
    record = open_record(suites, config, store, options, identity, model, run_id)
    stored = store.sample_verdicts(record.id) if options.resume is not None else None
    replayed = None if options.replay is None else _replayed_seeds(store, options.replay)
    plan = plan_run(chosen, options, record.id, stored, replayed)
    budget = None
    if options.budget is not None and model is not None:
        estimate = estimate_cost(store, config, model.id, plan.cases, batched=batched)
        budget = Budget(options.budget, estimate)
    judges = None
    if options.judge:
        from redline.running.judging import JudgeSession  # the judge stack loads only for --judge

        judges = JudgeSession.open(suites, config, blocks=options.judge_blocks)
    if judges is not None and options.resume is None:
        record = replace(record, args={**record.args, "judges": judges.record()})
    jobs = Schedule(plan)
    tally = Tally(record.id, jobs, progress, time.monotonic())
    limit = concurrency(options, config, provider, plan)
    batches = None
    if batched:
        batches = batch_provider(
            provider,
            run_id=record.id,
            ledger=store,
            wait_s=options.batch_wait_s,
            reuse_failures=not options.retry,
            fallback=options.batch_if_supported,
            direct_limit=limit,
            on_state=tally.batch_state,
        )
        batches.in_flight = lambda: jobs.in_flight
        # Every sample of a round waits for the batch at once: one worker each.
        limit = max(1, min(plan.most, BATCH_WORKERS))
    pipeline = SamplePipeline(
        batches or provider,
        run_id=record.id,
        model_name=model.name if model is not None else "",
        judges=judges,
        redactor=KeyRedactor.from_config(config, os.environ),
        stop_when_settled=config.stop_when_settled,
        # A batch answers its failures together: no probe can tell a dead provider there.
        breaker=batches is None,
    )
    inputs = CaseInputs(identity)
    finish = functools.partial(
        finish_run,
        store,
        record.id,
        identity,
        plan,
        budget=budget,
        rate_limit=rate_limiter(provider),
        inputs=inputs,
    )
    ahead = asyncio.ensure_future(inputs.ahead(plan.cases))
    try:
        async with _holding(store, record, resume=options.resume is not None):
            try:
                commits = Commits(store, tally, budget, off_loop=True)
                await draw_samples(limit, pipeline, commits, budget)
            except RunStopped as stopped:
                finish(interrupted=True)
                raise stopped.kept_in(len(store.sample_keys(record.id)), record.id) from None
            except StoreFull:
                raise
            except BaseException:
                finish(interrupted=True)
                raise
            return finish(interrupted=False, down=pipeline.down)
    except StoreFull:
        store.mark_interrupted(record.id)
        kept = len(store.sample_keys(record.id))
        raise StoreFull(store.path, kept=kept, run_id=record.id) from None
    finally:
        ahead.cancel()
        if batches is not None:
            await batches.aclose()
        if judges is not None:
            await judges.aclose()


@contextlib.asynccontextmanager
async def _holding(store: RunStore, record: RunRecord, *, resume: bool) -> AsyncIterator[None]:
    """The run stored (or reopened) and held by this process: claimed before any request,
    so a second `--resume` is refused, and its heartbeat beaten until the run ends (so
    `redline runs` tells a live run from one whose process is gone)."""
    store.claim_run(record.id)
    if resume:
        store.reopen_run(record.id)
    else:
        store.begin_run(record)
    beating = asyncio.ensure_future(_heartbeat(store, record.id))
    try:
        yield
    finally:
        beating.cancel()
        with contextlib.suppress(RedlineError):
            store.release_run(record.id)


async def _heartbeat(store: RunStore, run_id: str) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        with contextlib.suppress(RedlineError):
            store.heartbeat(run_id)


def _replayed_seeds(store: RunStore, run_id: str) -> dict[tuple[str, str], dict[int, int | None]]:
    """(suite, case id) → sample index → seed, of every sample the replayed run holds."""
    seeds: dict[tuple[str, str], dict[int, int | None]] = {}
    for s in store.samples(run_id):
        seeds.setdefault((s.suite, s.case_id), {})[s.index] = s.seed
    return seeds


__all__ = [
    "RETRIES_ARG",
    "ProgressCallback",
    "RunOptions",
    "RunProgress",
    "case_result",
    "estimate_run",
    "execute_run",
    "planned_samples",
    "resume_options",
    "run_manifest",
    "run_suites",
    "sample_seed",
    "samples_for",
    "sampling_plan",
    "select_cases",
]
