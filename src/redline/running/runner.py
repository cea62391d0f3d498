"""Run every case N times against one pinned model, judge each sample, keep every output.

All samples of a run share one concurrency bound (`--concurrency`, capped further by the
provider, e.g. the local model's 1). The samples that finish in one turn of the event loop
are committed together at the end of it, and none is counted (progress, case results)
before its commit returns, so an interrupt loses nothing finished and a crash only the
samples in flight or finished in that same turn; `resume` runs just the missing
(case, index) samples into the same run.

This module plans and schedules; each sample goes through `running.pipeline` (ask the
provider, check, judge, record), whatever answers it: the pinned model, or for a replay
the stored run it re-scores.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from redline.config import Config, ModelRef
from redline.errors import CaseNotFound, UsageError
from redline.gitio import repo_branch, repo_state
from redline.providers.factory import make_provider
from redline.redaction import KeyRedactor
from redline.running.budget import Budget, Estimate, estimate_cost
from redline.running.manifest import case_hash, suite_manifest
from redline.running.options import RunOptions, resume_options
from redline.running.pipeline import SampleJob, SamplePipeline, costly, refuse_unsupported
from redline.running.quarantine import QUARANTINED_ARG, active_quarantines, quarantined
from redline.running.replay import ReplayProvider
from redline.running.seeds import FROZEN_SEEDS_ARG, frozen_seeds, sample_seed
from redline.running.store import RunStore, new_run_id, now_iso
from redline.targets.factory import make_target, suites_target, unpinned
from redline.version import __version__
from redline.vocabulary.outcome import add_counts, case_outcome, run_result
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.vocabulary.sequential import Decision, SequentialDraw, SequentialPlan, adaptive_plan
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.providers.base import Provider
    from redline.suite.cases import Case, Suite


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

    @property
    def rate(self) -> float:
        """Samples per second observed so far."""
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the observed rate; None before the first sample finished."""
        if self.done == 0 or self.elapsed_s <= 0:
            return None
        return max(0.0, (self.total - self.done) / self.rate)


ProgressCallback = Callable[[RunProgress], None]


@dataclass
class _Plan:
    """Which cases run, at how many samples each, and which samples are still to do.

    For a sequentially sampled case `todo` holds its first `min` samples; the schedule
    adds more while the case is undecided, and its entry in `cases` is its `max`.
    """

    cases: list[tuple[Suite, Case, int]]
    todo: list[SampleJob]
    sequential: dict[tuple[str, str], _Sequence] = field(default_factory=dict)


@dataclass
class _Sequence:
    """One sequentially sampled case of the run: its draw, and how its jobs are made."""

    suite: Suite
    case: Case
    draw: SequentialDraw
    seeds: Callable[[int], int | None]
    costly: bool

    def jobs(self, indices: Iterable[int]) -> list[SampleJob]:
        return [SampleJob(self.suite, self.case, i, self.seeds(i), self.costly) for i in indices]

    def more(self) -> list[SampleJob]:
        return self.jobs(self.draw.more())


class _Schedule:
    """The jobs still to run: the plan's, then sequential batches as cases stay undecided."""

    def __init__(self, plan: _Plan) -> None:
        self.queue = deque(plan.todo)
        self.sequential = plan.sequential
        self.in_flight = 0
        self.changed = asyncio.Event()

    def take(self) -> SampleJob | None:
        if not self.queue:
            return None
        self.in_flight += 1
        return self.queue.popleft()

    def done(self, job: SampleJob, verdict: Verdict) -> None:
        self.in_flight -= 1
        seq = self.sequential.get((job.case.suite, job.case.id))
        if seq is not None:
            seq.draw.add(verdict)
            self.queue.extend(seq.more())
        self.changed.set()

    def dropped(self) -> None:
        """A taken job that will not finish (refused by the budget, or interrupted)."""
        self.in_flight -= 1
        self.changed.set()

    async def next(self) -> SampleJob | None:
        while True:
            job = self.take()
            if job is not None or self.in_flight == 0:
                return job
            self.changed.clear()
            await self.changed.wait()


def select_cases(suites: Sequence[Suite], options: RunOptions) -> list[tuple[Suite, Case]]:
    """The cases a run covers: case-id and tier filters, then the shard."""
    chosen = [(s, c) for s in suites for c in s.cases]
    if options.case_ids:
        known = {c.id for _, c in chosen}
        unknown = [i for i in options.case_ids if i not in known]
        if unknown:
            raise CaseNotFound(
                f"unknown case id(s): {', '.join(unknown)} "
                f"(see `redline validate` for the cases of these suites)"
            )
        wanted = set(options.case_ids)
        chosen = [(s, c) for s, c in chosen if c.id in wanted]
    if options.tier is not None:
        chosen = [(s, c) for s, c in chosen if c.tier == options.tier]
    if not chosen:
        raise UsageError("no case left to run after the --case/--tier filters")
    if options.shard is not None:
        # A shard may own no case (3 cases over 2 shards can all hash into one): that is
        # an empty, valid run, so the CI matrix job still exports a result to merge.
        from redline.running.shards import select  # CI only: kept off a plain run's start-up

        k, n = options.shard
        kept = {(c.suite, c.id) for c in select((c for _, c in chosen), k, n)}
        chosen = [(s, c) for s, c in chosen if (c.suite, c.id) in kept]
    return chosen


def samples_for(options: RunOptions, case: Case) -> int:
    """How many samples a case gets in this run (a sequentially sampled case: its most)."""
    fixed = options.samples or options.case_samples.get(f"{case.suite}/{case.id}")
    if fixed:
        return fixed
    sequential = sampling_plan(case, options.adaptive)
    return sequential.max if sequential is not None else case.samples


def planned_samples(
    suites: Sequence[Suite], store: RunStore | None, options: RunOptions
) -> list[tuple[Suite, Case, int]]:
    """(suite, case, samples still to request) for each selected case: what a cost
    estimate is made of. A resume counts only the missing samples, `--retry-transport`
    the samples it draws again, a sequentially sampled case its most."""
    done: set[tuple[str, str, int]] = set()
    redraw: dict[tuple[str, str], dict[Verdict, int]] = {}
    if options.resume is not None and store is not None:
        done = store.sample_keys(options.resume)
        if options.retry:
            redraw = store.verdict_counts(options.resume)
    planned = []
    for suite, case in select_cases(suites, options):
        if options.retry:
            counts = redraw.get((case.suite, case.id), {})
            n = sum(counts.get(v, 0) for v in options.retry)
        else:
            n = sum(
                1 for i in range(samples_for(options, case)) if (case.suite, case.id, i) not in done
            )
        if n:
            planned.append((suite, case, n))
    return planned


def run_model(suites: Sequence[Suite], config: Config, options: RunOptions) -> ModelRef:
    """The one pinned model a run uses: `--model`, else the suites' common alias (a
    target that chooses its own model: a model named after the target)."""
    if options.model_alias is not None:
        return config.model(options.model_alias)
    target = suites_target(suites)
    if target is not None and not any(s.model for s in suites):
        return unpinned(target)
    aliases = sorted({s.model for s in suites})
    if len(aliases) > 1:
        named = ", ".join(f"{s.name}: {s.model}" for s in suites)
        raise UsageError(
            f"these suites use different models ({named}); run them separately "
            "or pick one with --model ALIAS"
        )
    return config.model(aliases[0])


def run_manifest(suites: Sequence[Suite], model_id: str) -> dict[str, str]:
    """Hashes of every input of every suite in the run (docs/rules.md: Hash manifest)."""
    manifest: dict[str, str] = {}
    for suite in suites:
        manifest.update(suite_manifest(suite, model_id))
    return manifest


def estimate_run(
    suites: Sequence[Suite], config: Config, store: RunStore | None, options: RunOptions
) -> Estimate:
    """The estimate for a run (or rerun, or resume) as `execute_run` would plan it: the one
    function the CLI and the triage app call before spending money."""
    model = run_model(suites, config, options)
    planned = planned_samples(suites, store, options)
    return estimate_cost(store, config, model.id, planned)


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
    return asyncio.run(execute_run(suites, config, store, options, progress, provider))


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
    identity = provider.identity()
    record = _open_record(suites, config, store, options, identity, model)
    plan = _plan(chosen, options, store, record.id)
    budget = None
    if options.budget is not None and model is not None:
        budget = Budget(options.budget, estimate_cost(store, config, model.id, plan.cases))
    judges = None
    if options.judge:
        from redline.running.judging import JudgeSession  # the judge stack loads only for --judge

        judges = JudgeSession.open(suites, config, blocks=options.judge_blocks)
    if judges is not None and options.resume is None:
        record = replace(record, args={**record.args, "judges": judges.record()})
    state = _State(record.id, len(plan.todo), progress, time.monotonic())
    pipeline = SamplePipeline(
        provider,
        run_id=record.id,
        model_name=model.name if model is not None else "",
        judges=judges,
        redactor=KeyRedactor.from_config(config, os.environ),
        rejected=state.rejected,
        stop_when_settled=config.stop_when_settled,
    )
    if options.resume is None:
        store.begin_run(record)
    else:
        store.reopen_run(record.id)
    limit = _concurrency(options, config, provider, plan)
    jobs = _Schedule(plan)
    try:
        await _run_workers(jobs, limit, pipeline, _Commits(store, jobs, state, budget), budget)
    except BaseException:
        _finish(store, record.id, identity, plan, interrupted=True, budget=budget)
        raise
    finally:
        if judges is not None:
            await judges.aclose()
    return _finish(store, record.id, identity, plan, interrupted=False, budget=budget)


def _open_record(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    identity: str,
    model: ModelRef | None,
) -> RunRecord:
    """The run's record: a new one, or the resumed run's (its redrawn samples set aside)."""
    manifest = run_manifest(suites, identity)
    if options.resume is None:
        return _new_record(config, options, suites, identity, model, manifest)
    record = _reopen(
        store,
        options.resume,
        identity,
        manifest,
        retry=bool(options.retry),
        extend=options.extend,
    )
    if options.retry:
        record = _supersede(store, record, options.retry)
    return record


def _concurrency(options: RunOptions, config: Config, provider: Provider, plan: _Plan) -> int:
    """Workers for this run: `--concurrency` or the configured one, capped by the
    provider's own limit and by the samples there are to draw."""
    limit = options.concurrency or config.concurrency
    if provider.max_parallel is not None:
        limit = min(limit, provider.max_parallel)
    return max(1, min(limit, max(len(plan.todo), len(plan.sequential)) or 1))


async def _run_workers(
    jobs: _Schedule,
    limit: int,
    pipeline: SamplePipeline,
    commits: _Commits,
    budget: Budget | None,
) -> None:
    """Draw every scheduled sample with `limit` workers and one writer committing what
    they finish; on any exception (Ctrl-C included) store what finished, stop them all,
    say so, and let it propagate."""
    commits.state.report()
    commits.workers = limit
    tasks = [asyncio.ensure_future(_worker(jobs, pipeline, commits, budget)) for _ in range(limit)]
    tasks.append(asyncio.ensure_future(commits.write()))
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        try:
            commits.flush()
        finally:
            commits.state.report(stopping=True)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        raise


class _State:
    def __init__(
        self, run_id: str, total: int, progress: ProgressCallback | None, started: float
    ) -> None:
        self.run_id = run_id
        self.total = total
        self.done = 0
        self.counts: dict[Verdict, int] = dict.fromkeys(Verdict, 0)
        self.progress = progress
        self.started = started
        #: `suite/case` → samples of it in flight (insertion order: oldest first).
        self.running: dict[str, int] = {}

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

    def rejected(self, error: str) -> str:
        """What a run says when the provider refused the key before it ever answered."""
        return (
            f"{error}. The run stopped at its first request(s) instead of "
            f"sending the rest; {self.done} finished sample(s) are kept in run "
            f"{self.run_id}. Fix the key, then: redline run --resume {self.run_id}"
        )

    def report(self, last: SampleRecord | None = None, *, stopping: bool = False) -> None:
        if self.progress is not None:
            self.progress(
                RunProgress(
                    run_id=self.run_id,
                    total=self.total,
                    done=self.done,
                    verdicts=dict(self.counts),
                    elapsed_s=time.monotonic() - self.started,
                    last=last,
                    stopping=stopping,
                    running=tuple(self.running),
                )
            )


class _Commits:
    """Finished samples on their way to the store: committed in batches, each sample
    counted as done (progress, schedule, budget) only once its commit returned.

    A batch holds what finished before the writer's next turn of the event loop (samples
    whose answers arrived together): one commit instead of one per sample, no worker
    waits for it, and no finished sample waits on a timer, so a kill loses no more than
    committing each sample on its own would. With a budget each sample is committed on
    arrival, so it settles its cost before its worker asks the budget for the next sample.
    """

    def __init__(
        self, store: RunStore, jobs: _Schedule, state: _State, budget: Budget | None
    ) -> None:
        self.store = store
        self.jobs = jobs
        self.state = state
        self.budget = budget
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
            self.flush()

    def flush(self) -> None:
        """Commit the pending samples, then count them (progress, schedule, budget)."""
        batch, self.pending = self.pending, []
        if not batch:
            return
        self.store.add_samples(sample for _, sample, _ in batch)
        for job, sample, reserved in batch:
            if self.budget is not None:
                self.budget.settle(sample.suite, sample.case_id, sample.cost, reserved)
            self.jobs.done(job, sample.verdict)
            self.state.record(sample)


async def _worker(
    jobs: _Schedule,
    pipeline: SamplePipeline,
    commits: _Commits,
    budget: Budget | None = None,
) -> None:
    """Draw samples until the schedule is empty; each finished one goes to `commits`."""
    try:
        while (job := await jobs.next()) is not None:
            reserved = 0.0
            if budget is not None:
                admitted = budget.admit(job.case.suite, job.case.id)
                if admitted is None:
                    jobs.dropped()
                    return
                reserved = admitted
            try:
                commits.state.start(job)
                sample = await pipeline.draw(job)
            except BaseException:
                jobs.in_flight -= 1
                raise
            commits.add(job, sample, reserved)
    finally:
        commits.worker_done()


def _new_record(
    config: Config,
    options: RunOptions,
    suites: Sequence[Suite],
    identity: str,
    model: ModelRef | None,
    manifest: Mapping[str, str],
) -> RunRecord:
    commit, dirty = repo_state(config.root)
    args = options.stored_args()
    held = active_quarantines(suites, datetime.now(UTC).date())
    if held:
        args[QUARANTINED_ARG] = held
    frozen = frozen_seeds(suites)
    if frozen:
        args[FROZEN_SEEDS_ARG] = frozen
    return RunRecord(
        id=options.run_id or new_run_id(),
        kind=options.kind,
        status=RunStatus.RUNNING,
        result=None,
        started_at=now_iso(),
        finished_at=None,
        model_id=identity,
        model_alias=options.model_alias or (model.alias if model is not None else "replay"),
        suites=tuple(s.name for s in suites),
        parent_id=options.parent_id,
        git_commit=commit,
        git_dirty=dirty,
        git_branch=repo_branch(config.root),
        redline_version=__version__,
        args=args,
        manifest=dict(manifest),
    )


def _reopen(
    store: RunStore,
    run_id: str,
    identity: str,
    manifest: Mapping[str, str],
    *,
    retry: bool = False,
    extend: bool = False,
) -> RunRecord:
    record = store.run(run_id)
    stopped = bool((record.args.get("budget") or {}).get("stopped"))
    if record.status is RunStatus.FINISHED and not retry and not stopped and not extend:
        raise UsageError(f"run {record.id} finished already; nothing to resume")
    if record.kind is RunKind.REPLAY:
        raise UsageError(
            f"run {record.id} is a replay of {record.parent_id}; replay that run again "
            f"instead: redline run --replay {record.parent_id}"
        )
    if record.model_id != identity:
        raise UsageError(
            f"run {record.id} used model {record.model_id}, now pinned is {identity}; "
            "a resume must use the same model: start a new run"
        )
    changed = sorted(
        p for p in set(record.manifest) | set(manifest) if record.manifest.get(p) != manifest.get(p)
    )
    if changed:
        raise UsageError(
            f"inputs changed since run {record.id} started ({', '.join(changed[:5])}"
            f"{', ...' if len(changed) > 5 else ''}); a resume would mix evidence: "
            "start a new run"
        )
    return record


#: The run argument listing how a run was completed after it first finished.
RETRIES_ARG = "retries"


def _supersede(store: RunStore, record: RunRecord, verdicts: Sequence[Verdict]) -> RunRecord:
    """Set aside the samples to draw again, and say so in the run's record."""
    counts = add_counts(store.verdict_counts(record.id).values())
    wanted = {str(v): counts.get(v, 0) for v in verdicts if counts.get(v, 0)}
    if not wanted:
        names = " or ".join(str(v) for v in verdicts)
        raise UsageError(f"run {record.id} has no {names} sample to draw again")
    store.supersede_samples(record.id, verdicts)
    retries = [*record.args.get(RETRIES_ARG, []), {"at": now_iso(), "redrawn": wanted}]
    args = {**record.args, RETRIES_ARG: retries}
    store.update_args(record.id, args)
    return replace(record, args=args)


def _plan(
    chosen: Sequence[tuple[Suite, Case]],
    options: RunOptions,
    store: RunStore,
    run_id: str,
) -> _Plan:
    """The samples to draw: a replay's are the replayed run's, any other run's the
    case's fixed or sequential count; a resume skips what is stored already."""
    done = store.sample_keys(run_id) if options.resume is not None else set()
    stored_counts = store.verdict_counts(run_id) if done else {}
    replayed = None if options.replay is None else _replayed_seeds(store, options.replay)
    plan = _Plan([], [])
    for suite, case in chosen:
        key = (case.suite, case.id)
        if replayed is not None:
            _plan_replayed(plan, suite, case, replayed.get(key, {}), done)
            continue
        fixed = options.samples or options.case_samples.get(f"{case.suite}/{case.id}")
        sequential = None if fixed else sampling_plan(case, options.adaptive)

        def seeds(i: int, suite: Suite = suite, case: Case = case) -> int | None:
            return sample_seed(run_id, case.suite, case.id, i, frozen=suite.seed)

        if sequential is None:
            n = fixed or case.samples
            plan.cases.append((suite, case, n))
            heavy = costly(case)
            plan.todo.extend(
                SampleJob(suite, case, i, seeds(i), heavy)
                for i in range(n)
                if (*key, i) not in done
            )
            continue
        seq = _Sequence(suite, case, SequentialDraw(sequential), seeds, costly(case))
        _plan_sequential(plan, seq, {i for s, c, i in done if (s, c) == key})
        for verdict, count in stored_counts.get(key, {}).items():
            for _ in range(count):
                seq.draw.add(verdict)
        plan.todo.extend(seq.more())
    if chosen and not plan.cases:
        raise UsageError("the replayed run has no stored samples for the selected cases")
    return plan


def _replayed_seeds(store: RunStore, run_id: str) -> dict[tuple[str, str], dict[int, int | None]]:
    """(suite, case id) → sample index → seed, of every sample the replayed run holds."""
    seeds: dict[tuple[str, str], dict[int, int | None]] = {}
    for s in store.samples(run_id):
        seeds.setdefault((s.suite, s.case_id), {})[s.index] = s.seed
    return seeds


def _plan_replayed(
    plan: _Plan,
    suite: Suite,
    case: Case,
    stored: Mapping[int, int | None],
    done: set[tuple[str, str, int]],
) -> None:
    """A replay draws exactly the samples the replayed run holds, with their seeds."""
    if not stored:
        return
    plan.cases.append((suite, case, len(stored)))
    heavy = costly(case)
    plan.todo.extend(
        SampleJob(suite, case, i, seed, heavy)
        for i, seed in stored.items()
        if (case.suite, case.id, i) not in done
    )


def _plan_sequential(plan: _Plan, seq: _Sequence, stored: set[int]) -> None:
    """A sequentially sampled case starts with its `min` samples (or as many as a resumed
    run drew already), less those stored."""
    draw = seq.draw
    plan.cases.append((seq.suite, seq.case, draw.plan.max))
    plan.sequential[(seq.case.suite, seq.case.id)] = seq
    draw.drawn = max(draw.plan.min, max(stored) + 1 if stored else 0)
    plan.todo.extend(seq.jobs(i for i in range(draw.drawn) if i not in stored))


def sampling_plan(case: Case, adaptive: bool) -> SequentialPlan | None:
    """The case's sequential plan: its own, or `--adaptive`'s for a fixed-N case."""
    if case.sampling is not None:
        return case.sampling
    if adaptive:
        return adaptive_plan(case.tier, case.samples, case.required)
    return None


_SEQUENTIAL_OUTCOME = {
    Decision.PASS: CaseOutcome.PASS,
    Decision.FAIL: CaseOutcome.FAIL,
    Decision.MARGINAL: CaseOutcome.MARGINAL,
    Decision.INCONCLUSIVE: CaseOutcome.INCONCLUSIVE,
}


def _finish(
    store: RunStore,
    run_id: str,
    model_id: str,
    plan: _Plan,
    *,
    interrupted: bool,
    budget: Budget | None = None,
) -> RunRecord:
    """Store each case's result and the run's, and close the run."""
    counts = store.verdict_counts(run_id)
    records: list[CaseRecord] = []
    not_run: dict[str, int] = {}
    folders: dict[Path, str] = {}
    for _suite, case, samples in plan.cases:
        verdicts = counts.get((case.suite, case.id))
        stored = sum(verdicts.values()) if verdicts is not None else 0
        seq = plan.sequential.get((case.suite, case.id))
        draw = seq.draw if seq is not None else None
        if stored < samples and (draw is None or draw.decision() is None):
            not_run[f"{case.suite}/{case.id}"] = samples - stored
        if verdicts is not None:
            required, outcome = case_result(case, samples, verdicts, draw)
            records.append(
                CaseRecord(
                    run_id=run_id,
                    suite=case.suite,
                    case_id=case.id,
                    tier=case.tier,
                    model_id=model_id,
                    samples=stored,
                    required=required,
                    passes=verdicts.get(Verdict.OK, 0),
                    result=outcome,
                    verdicts=verdicts,
                    case_hash=case_hash(case, folders),
                )
            )
    store.put_cases(records)
    result: RunResult | None = None
    if not interrupted:
        held = quarantined(store.run(run_id))
        counted = [r for r in records if f"{r.suite}/{r.case_id}" not in held]
        result = run_result((r.result for r in counted), add_counts(r.verdicts for r in records))
    _record_budget(store, run_id, budget, not_run)
    if budget is not None and budget.stopped and not interrupted:
        # Money ran out, not evidence: the samples not run could have gone either way.
        result = RunResult.INCONCLUSIVE
    status = RunStatus.INTERRUPTED if interrupted else RunStatus.FINISHED
    store.finish_run(run_id, status, result, now_iso())
    return store.run(run_id)


def case_result(
    case: Case,
    samples: int,
    verdicts: Mapping[Verdict, int],
    draw: SequentialDraw | None = None,
) -> tuple[int, CaseOutcome]:
    """(passes required, outcome) of a case from its verdicts: its sequential draw's
    decision, or its pass rate over the `samples` planned (those not drawn count as
    transport). `redline run` and `pytest cases/` decide a case with this."""
    stored = sum(verdicts.values())
    if draw is not None:
        required = math.ceil(draw.plan.bar * stored - 1e-9) if stored else 1
        return required, _SEQUENTIAL_OUTCOME[draw.decision() or Decision.INCONCLUSIVE]
    required = case.required_for(samples)
    undecided = dict(verdicts)
    undecided[Verdict.TRANSPORT] = undecided.get(Verdict.TRANSPORT, 0) + max(0, samples - stored)
    return required, case_outcome(required, undecided)


def _record_budget(
    store: RunStore, run_id: str, budget: Budget | None, not_run: dict[str, int]
) -> None:
    """Keep what the budget spent (and which samples it left undrawn) in the run's args."""
    recorded = store.run(run_id).args
    if budget is None and "budget" not in recorded:
        return
    args = {k: v for k, v in recorded.items() if k != "budget"}
    if budget is not None:
        args["budget"] = budget.record(not_run if budget.stopped else {})
    store.update_args(run_id, args)


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
    "run_suites",
    "sample_seed",
    "samples_for",
    "sampling_plan",
    "select_cases",
]
