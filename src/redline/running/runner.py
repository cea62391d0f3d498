"""Run every case N times against one pinned model, judge each sample, keep every output.

All samples of a run share one concurrency bound (`--concurrency`, capped further by the
provider, e.g. the local model's 1). Each finished sample is stored before the worker takes
the next one, so an interrupt or a crash loses only the samples in flight; `resume` runs
just the missing (case, index) samples into the same run.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from redline import __version__
from redline.assertions import LAYER_1, evaluate_sample
from redline.ci.shard import select
from redline.config import Config, ModelRef
from redline.deciding.quarantine import QUARANTINED_ARG, active_quarantines, quarantined
from redline.errors import CaseNotFound, CredentialsRejected, UsageError
from redline.gitio import repo_branch, repo_state
from redline.providers import make_provider
from redline.providers.completion import ChatRequest
from redline.providers.replay import ReplayProvider
from redline.redaction import KeyRedactor
from redline.running.budget import Budget, estimate_cost
from redline.running.manifest import case_hash, suite_manifest
from redline.running.options import RunOptions, resume_options
from redline.running.outcome import add_counts, case_outcome, run_result
from redline.running.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.running.seeds import FROZEN_SEEDS_ARG, frozen_seeds, sample_seed
from redline.running.sequential import Decision, SequentialPlan, adaptive_plan
from redline.running.store import RunStore, new_run_id, now_iso
from redline.running.verdicts import NON_CONTENT_VERDICTS, Verdict

if TYPE_CHECKING:
    from redline.judge import JudgeSession
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


@dataclass(frozen=True)
class _Job:
    suite: Suite
    case: Case
    index: int
    seed: int | None
    #: Layer 2 assertions (models, judge) are evaluated off the event loop.
    costly: bool = False


@dataclass
class _Plan:
    """Which cases run, at how many samples each, and which samples are still to do.

    For a sequentially sampled case `todo` holds its first `min` samples; the schedule
    adds more while the case is undecided, and its entry in `cases` is its `max`.
    """

    cases: list[tuple[Suite, Case, int]]
    todo: list[_Job]
    sequential: dict[tuple[str, str], _Sequence] = field(default_factory=dict)


@dataclass
class _Sequence:
    """One sequentially sampled case: what it has drawn, what is still in flight."""

    suite: Suite
    case: Case
    plan: SequentialPlan
    seeds: Callable[[int], int | None]
    costly: bool
    drawn: int = 0
    finished: int = 0
    passes: int = 0
    failures: int = 0
    other: int = 0

    def add(self, verdict: Verdict) -> None:
        self.finished += 1
        if verdict is Verdict.OK:
            self.passes += 1
        elif verdict in NON_CONTENT_VERDICTS:
            self.other += 1
        else:
            self.failures += 1

    def decision(self) -> Decision | None:
        return self.plan.decide(self.passes, self.failures, self.other)

    def more(self) -> list[_Job]:
        """The next batch once every drawn sample is in: as many as could decide a pass."""
        if self.finished < self.drawn or self.decision() is not None:
            return []
        batch = 1
        while (
            self.drawn + batch < self.plan.max
            and self.plan.decide(self.passes + batch, self.failures, self.other) is None
        ):
            batch += 1
        start = self.drawn
        self.drawn += batch
        return [
            _Job(self.suite, self.case, i, self.seeds(i), self.costly)
            for i in range(start, self.drawn)
        ]


class _Schedule:
    """The jobs still to run: the plan's, then sequential batches as cases stay undecided."""

    def __init__(self, plan: _Plan) -> None:
        self.queue = deque(plan.todo)
        self.sequential = plan.sequential
        self.in_flight = 0
        self.changed = asyncio.Event()

    def take(self) -> _Job | None:
        if not self.queue:
            return None
        self.in_flight += 1
        return self.queue.popleft()

    def done(self, job: _Job, verdict: Verdict) -> None:
        self.in_flight -= 1
        seq = self.sequential.get((job.case.suite, job.case.id))
        if seq is not None:
            seq.add(verdict)
            self.queue.extend(seq.more())
        self.changed.set()

    async def next(self) -> _Job | None:
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
    """The one pinned model a run uses: `--model`, else the suites' common alias."""
    if options.model_alias is not None:
        return config.model(options.model_alias)
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


async def execute_run(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    progress: ProgressCallback | None = None,
    provider: Provider | None = None,
) -> RunRecord:
    """Run (or resume, or replay) and return the stored run record.

    Raises `UsageError`/`ConfigError` before any model call when the run cannot start.
    On cancellation (Ctrl-C) the finished samples are already stored, case results are
    written for what is there, the run is marked `interrupted`, and the cancel propagates.
    """
    if options.replay is not None:
        replay = ReplayProvider(store, options.replay)
        return await _execute(
            suites, config, store, replace(options, kind=RunKind.REPLAY), progress, replay, None
        )
    model = run_model(suites, config, options)
    owned = provider is None
    if provider is None:
        provider = make_provider(model, config, os.environ)
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
    provider: Provider | ReplayProvider,
    model: ModelRef | None,
) -> RunRecord:
    chosen = select_cases(suites, options)
    identity = provider.identity()
    manifest = run_manifest(suites, identity)
    if options.resume is not None:
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
    else:
        record = _new_record(config, options, suites, identity, model, manifest, provider)
    plan = _plan(chosen, options, store, record.id, provider)
    budget = None
    if options.budget is not None and model is not None:
        budget = Budget(options.budget, estimate_cost(store, config, model.id, plan.cases))
    judges = None
    if options.judge:
        from redline.judge import JudgeSession  # the judge stack loads only for --judge

        judges = JudgeSession.open(suites, config, blocks=options.judge_blocks)
    if judges is not None and options.resume is None:
        record = replace(record, args={**record.args, "judges": judges.record()})
    started = time.monotonic()
    state = _State(record.id, len(plan.todo), progress, started)
    state.redact = KeyRedactor.from_config(config, os.environ)
    if options.resume is None:
        store.begin_run(record)
    else:
        store.reopen_run(record.id)
    limit = options.concurrency or config.concurrency
    if provider.max_parallel is not None:
        limit = min(limit, provider.max_parallel)
    limit = max(1, min(limit, max(len(plan.todo), len(plan.sequential)) or 1))
    jobs = _Schedule(plan)
    state.report()
    workers = [
        asyncio.ensure_future(_worker(jobs, provider, model, store, state, judges, budget))
        for _ in range(limit)
    ]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        state.report(stopping=True)
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        _finish(store, record.id, identity, plan, interrupted=True, budget=budget)
        raise
    finally:
        if judges is not None:
            await judges.aclose()
    return _finish(store, record.id, identity, plan, interrupted=False, budget=budget)


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
        #: The provider has answered at least once in this run (so its key works).
        self.answered = False
        self.redact = KeyRedactor()

    def start(self, job: _Job) -> None:
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
                    total=self.total,
                    done=self.done,
                    verdicts=dict(self.counts),
                    elapsed_s=time.monotonic() - self.started,
                    last=last,
                    stopping=stopping,
                    running=tuple(self.running),
                )
            )


async def _worker(
    jobs: _Schedule,
    provider: Provider | ReplayProvider,
    model: ModelRef | None,
    store: RunStore,
    state: _State,
    judges: JudgeSession | None = None,
    budget: Budget | None = None,
) -> None:
    while (job := await jobs.next()) is not None:
        reserved = 0.0
        if budget is not None:
            admitted = budget.admit(job.case.suite, job.case.id)
            if admitted is None:
                jobs.in_flight -= 1
                jobs.changed.set()
                return
            reserved = admitted
        try:
            state.start(job)
            sample = state.redact.sample(await _sample(job, provider, model, state, judges))
        except BaseException:
            jobs.in_flight -= 1
            raise
        store.add_sample(sample)
        if budget is not None:
            budget.settle(sample.suite, sample.case_id, sample.cost, reserved)
        jobs.done(job, sample.verdict)
        state.record(sample)


async def _sample(
    job: _Job,
    provider: Provider | ReplayProvider,
    model: ModelRef | None,
    state: _State,
    judges: JudgeSession | None,
) -> SampleRecord:
    """Ask the model (or the stored run) once, judge the answer, and build its record.

    The provider refusing the key before it ever answered stops the run (exit 2): every
    other request would be refused too.
    """
    if isinstance(provider, ReplayProvider):
        completion = provider.stored(job.case.suite, job.case.id, job.index)
    else:
        assert model is not None
        system, user = job.suite.render(job.case)
        request = ChatRequest(
            model=model.name,
            system=system,
            user=user,
            max_tokens=job.suite.max_tokens,
            temperature=job.suite.temperature,
            seed=job.seed,
        )
        completion = await provider.complete(request)
        if completion.credentials_rejected and not state.answered:
            raise CredentialsRejected(
                f"{completion.error}. The run stopped at its first request(s) instead of "
                f"sending the rest; {state.done} finished sample(s) are kept in run "
                f"{state.run_id}. Fix the key, then: redline run --resume {state.run_id}"
            )
        if completion.ok:
            state.answered = True
    if job.costly:
        evaluation = await asyncio.to_thread(evaluate_sample, job.case, completion)
    else:
        evaluation = evaluate_sample(job.case, completion)
    if judges is not None:
        from redline.judge import judge_pending

        evaluation = await judge_pending(judges, job.case, completion, evaluation, job.seed)
    return SampleRecord.of_answer(
        completion,
        run_id=state.run_id,
        suite=job.case.suite,
        case_id=job.case.id,
        index=job.index,
        verdict=evaluation.verdict,
        model=completion.model or (model.name if model is not None else ""),
        seed=job.seed,
        assertions=evaluation.results,
        created_at=now_iso(),
    )


def _new_record(
    config: Config,
    options: RunOptions,
    suites: Sequence[Suite],
    identity: str,
    model: ModelRef | None,
    manifest: Mapping[str, str],
    provider: Provider | ReplayProvider,
) -> RunRecord:
    commit, dirty = repo_state(config.root)
    parent = options.parent_id
    args = options.stored_args()
    held = active_quarantines(suites, datetime.now(UTC).date())
    if held:
        args[QUARANTINED_ARG] = held
    frozen = frozen_seeds(suites)
    if frozen:
        args[FROZEN_SEEDS_ARG] = frozen
    if isinstance(provider, ReplayProvider):
        parent = provider.parent_id
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
        parent_id=parent,
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
    provider: Provider | ReplayProvider,
) -> _Plan:
    done = store.sample_keys(run_id) if options.resume is not None else set()
    stored_counts = store.verdict_counts(run_id) if done else {}
    plan = _Plan([], [])
    for suite, case in chosen:
        costly = any(a.layer > LAYER_1 for a in case.assertions)
        fixed = options.samples or options.case_samples.get(f"{case.suite}/{case.id}")
        sequential = None if fixed else sampling_plan(case, options.adaptive)
        if isinstance(provider, ReplayProvider):
            stored = provider.seeds(case.suite, case.id)
            if not stored:
                continue
            plan.cases.append((suite, case, len(stored)))
            plan.todo.extend(
                _Job(suite, case, i, seed, costly)
                for i, seed in stored.items()
                if (case.suite, case.id, i) not in done
            )
            continue

        def seeds(i: int, suite: Suite = suite, case: Case = case) -> int | None:
            return sample_seed(run_id, case.suite, case.id, i, frozen=suite.seed)

        if sequential is None:
            n = fixed or case.samples
            plan.cases.append((suite, case, n))
            plan.todo.extend(
                _Job(suite, case, i, seeds(i), costly)
                for i in range(n)
                if (case.suite, case.id, i) not in done
            )
            continue
        plan.cases.append((suite, case, sequential.max))
        seq = _Sequence(suite, case, sequential, seeds, costly)
        plan.sequential[(case.suite, case.id)] = seq
        mine = sorted(i for s_, c, i in done if (s_, c) == (case.suite, case.id))
        seq.drawn = max(sequential.min, mine[-1] + 1 if mine else 0)
        plan.todo.extend(
            _Job(suite, case, i, seeds(i), costly) for i in range(seq.drawn) if i not in mine
        )
        for verdict, count in stored_counts.get((case.suite, case.id), {}).items():
            for _ in range(count):
                seq.add(verdict)
        plan.todo.extend(seq.more())
    if chosen and not plan.cases:
        raise UsageError("the replayed run has no stored samples for the selected cases")
    return plan


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
    counts = store.verdict_counts(run_id)
    records: list[CaseRecord] = []
    not_run: dict[str, int] = {}
    for _suite, case, samples in plan.cases:
        verdicts = counts.get((case.suite, case.id))
        stored = sum(verdicts.values()) if verdicts is not None else 0
        seq = plan.sequential.get((case.suite, case.id))
        if stored < samples and (seq is None or seq.decision() is None):
            not_run[f"{case.suite}/{case.id}"] = samples - stored
        if verdicts is None:
            continue
        if seq is not None:
            required = math.ceil(seq.plan.bar * stored - 1e-9) if stored else 1
            outcome = _SEQUENTIAL_OUTCOME[seq.decision() or Decision.INCONCLUSIVE]
        else:
            required = case.required_for(samples)
            missing = max(0, samples - stored)
            undecided = dict(verdicts)
            undecided[Verdict.TRANSPORT] = undecided.get(Verdict.TRANSPORT, 0) + missing
            outcome = case_outcome(required, undecided)
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
                case_hash=case_hash(case),
            )
        )
    store.put_cases(records)
    result: RunResult | None = None
    if not interrupted:
        held = quarantined(store.run(run_id))
        counted = [r for r in records if f"{r.suite}/{r.case_id}" not in held]
        result = run_result((r.result for r in counted), add_counts(r.verdicts for r in records))
    recorded = store.run(run_id).args
    if budget is not None or "budget" in recorded:
        args = {k: v for k, v in recorded.items() if k != "budget"}
        if budget is not None:
            args["budget"] = budget.record(not_run if budget.stopped else {})
        store.update_args(run_id, args)
    if budget is not None and budget.stopped and not interrupted:
        # Money ran out, not evidence: the samples not run could have gone either way.
        result = RunResult.INCONCLUSIVE
    status = RunStatus.INTERRUPTED if interrupted else RunStatus.FINISHED
    store.finish_run(run_id, status, result, now_iso())
    return store.run(run_id)


__all__ = [
    "RETRIES_ARG",
    "ProgressCallback",
    "RunOptions",
    "RunProgress",
    "execute_run",
    "planned_samples",
    "resume_options",
    "run_suites",
    "sample_seed",
    "samples_for",
    "sampling_plan",
    "select_cases",
]
