"""Run every case N times against one pinned model, judge each sample, keep every output.

All samples of a run share one concurrency bound (`--concurrency`, capped further by the
provider, e.g. the local model's 1). Each finished sample is stored before the worker takes
the next one, so an interrupt or a crash loses only the samples in flight; `resume` runs
just the missing (case, index) samples into the same run.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from redline import __version__
from redline.assertions import LAYER_1, evaluate_sample
from redline.completion import ChatRequest
from redline.config import Config, ModelRef
from redline.errors import UsageError
from redline.gitio import repo_branch, repo_state
from redline.judge import JudgeSession, judge_pending
from redline.manifest import case_hash, suite_manifest
from redline.outcome import add_counts, case_outcome, run_result
from redline.providers import make_provider
from redline.providers.replay import ReplayProvider
from redline.records import (
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.shard import select
from redline.store import RunStore, new_run_id, now_iso
from redline.verdicts import Verdict

if TYPE_CHECKING:
    from redline.cases import Case, Suite
    from redline.providers.base import Provider


@dataclass(frozen=True)
class RunOptions:
    """What a user can change about a run without editing a file."""

    samples: int | None = None
    case_ids: tuple[str, ...] = ()
    tier: str | None = None
    model_alias: str | None = None
    concurrency: int | None = None
    kind: RunKind = RunKind.RUN
    parent_id: str | None = None
    resume: str | None = None
    replay: str | None = None
    shard: tuple[int, int] | None = None
    run_id: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    #: Run Layer 2 judges (`--judge`); trusted judges fail samples only with `judge_blocks`.
    judge: bool = False
    judge_blocks: bool = False


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

    @property
    def rate(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0


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
    """Which cases run, at how many samples each, and which samples are still to do."""

    cases: list[tuple[Suite, Case, int]]
    todo: list[_Job]


def sample_seed(run_id: str, suite: str, case_id: str, index: int) -> int:
    """A distinct seed per sample (31 bits: every server accepts it).

    Fixed within a run, so a resumed run asks for exactly the samples it lacks; different
    between runs, so a rerun or tomorrow's nightly draws new samples instead of replaying
    today's outputs on a seeded backend (which would make two runs look like one).
    """
    key = f"{run_id}\x00{suite}\x00{case_id}\x00{index}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def select_cases(suites: Sequence[Suite], options: RunOptions) -> list[tuple[Suite, Case]]:
    """The cases a run covers: case-id and tier filters, then the shard."""
    chosen = [(s, c) for s in suites for c in s.cases]
    if options.case_ids:
        known = {c.id for _, c in chosen}
        unknown = [i for i in options.case_ids if i not in known]
        if unknown:
            raise UsageError(
                f"unknown case id(s): {', '.join(unknown)} "
                f"(see `redline validate` for the cases of these suites)"
            )
        wanted = set(options.case_ids)
        chosen = [(s, c) for s, c in chosen if c.id in wanted]
    if options.tier is not None:
        chosen = [(s, c) for s, c in chosen if c.tier == options.tier]
    if options.shard is not None:
        k, n = options.shard
        kept = {(c.suite, c.id) for c in select((c for _, c in chosen), k, n)}
        chosen = [(s, c) for s, c in chosen if (c.suite, c.id) in kept]
    if not chosen:
        raise UsageError("no case left to run after the --case/--tier/--shard filters")
    return chosen


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
    """Hashes of every input of every suite in the run (DESIGN rule 7)."""
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
        record = _reopen(store, options.resume, identity, manifest)
    else:
        record = _new_record(config, options, suites, identity, model, manifest, provider)
    plan = _plan(chosen, options, store, record.id, provider)
    judges = None
    if options.judge:
        judges = JudgeSession.open(suites, config, blocks=options.judge_blocks)
    if judges is not None and options.resume is None:
        record = replace(record, args={**record.args, "judges": judges.record()})
    started = time.monotonic()
    state = _State(record.id, len(plan.todo), progress, started)
    if options.resume is None:
        store.begin_run(record)
    else:
        store.reopen_run(record.id)
    limit = options.concurrency or config.concurrency
    if provider.max_parallel is not None:
        limit = min(limit, provider.max_parallel)
    limit = max(1, min(limit, len(plan.todo) or 1))
    jobs = iter(plan.todo)
    state.report()
    workers = [
        asyncio.ensure_future(_worker(jobs, provider, model, store, state, judges))
        for _ in range(limit)
    ]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        state.report(stopping=True)
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        _finish(store, record.id, identity, plan, interrupted=True)
        raise
    finally:
        if judges is not None:
            await judges.aclose()
    return _finish(store, record.id, identity, plan, interrupted=False)


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

    def record(self, sample: SampleRecord) -> None:
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
                )
            )


async def _worker(
    jobs: Iterator[_Job],
    provider: Provider | ReplayProvider,
    model: ModelRef | None,
    store: RunStore,
    state: _State,
    judges: JudgeSession | None = None,
) -> None:
    for job in jobs:
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
        if job.costly:
            evaluation = await asyncio.to_thread(evaluate_sample, job.case, completion)
        else:
            evaluation = evaluate_sample(job.case, completion)
        if judges is not None:
            evaluation = await judge_pending(judges, job.case, completion, evaluation, job.seed)
        sample = SampleRecord(
            run_id=state.run_id,
            suite=job.case.suite,
            case_id=job.case.id,
            index=job.index,
            output=completion.text,
            verdict=evaluation.verdict,
            finish_reason=completion.finish_reason,
            model=completion.model or (model.name if model is not None else ""),
            seed=job.seed,
            latency_ms=completion.latency_ms,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost=completion.cost,
            error=completion.error,
            attempts=completion.attempts,
            assertions=evaluation.results,
            created_at=now_iso(),
        )
        store.add_sample(sample)
        state.record(sample)


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
        args=dict(options.args),
        manifest=dict(manifest),
    )


def _reopen(store: RunStore, run_id: str, identity: str, manifest: Mapping[str, str]) -> RunRecord:
    record = store.run(run_id)
    if record.status is RunStatus.FINISHED:
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


def _plan(
    chosen: Sequence[tuple[Suite, Case]],
    options: RunOptions,
    store: RunStore,
    run_id: str,
    provider: Provider | ReplayProvider,
) -> _Plan:
    done = store.sample_keys(run_id) if options.resume is not None else set()
    cases: list[tuple[Suite, Case, int]] = []
    todo: list[_Job] = []
    for suite, case in chosen:
        seeds: dict[int, int | None]
        if isinstance(provider, ReplayProvider):
            seeds = provider.seeds(case.suite, case.id)
            if not seeds:
                continue
        else:
            n = options.samples or case.samples
            seeds = {i: sample_seed(run_id, case.suite, case.id, i) for i in range(n)}
        cases.append((suite, case, len(seeds)))
        costly = any(a.layer > LAYER_1 for a in case.assertions)
        todo.extend(
            _Job(suite, case, i, seed, costly)
            for i, seed in seeds.items()
            if (case.suite, case.id, i) not in done
        )
    if not cases:
        raise UsageError("the replayed run has no stored samples for the selected cases")
    return _Plan(cases, todo)


def _finish(
    store: RunStore, run_id: str, model_id: str, plan: _Plan, *, interrupted: bool
) -> RunRecord:
    counts = store.verdict_counts(run_id)
    records: list[CaseRecord] = []
    for _suite, case, samples in plan.cases:
        verdicts = counts.get((case.suite, case.id))
        if verdicts is None:
            continue
        stored = sum(verdicts.values())
        required = case.required_for(samples)
        missing = max(0, samples - stored)
        undecided = dict(verdicts)
        undecided[Verdict.TRANSPORT] = undecided.get(Verdict.TRANSPORT, 0) + missing
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
                result=case_outcome(required, undecided),
                verdicts=verdicts,
                case_hash=case_hash(case),
            )
        )
    store.put_cases(records)
    result: RunResult | None = None
    if not interrupted:
        result = run_result((r.result for r in records), add_counts(r.verdicts for r in records))
    status = RunStatus.INTERRUPTED if interrupted else RunStatus.FINISHED
    store.finish_run(run_id, status, result, now_iso())
    return store.run(run_id)


__all__ = [
    "ProgressCallback",
    "RunOptions",
    "RunProgress",
    "execute_run",
    "run_suites",
    "sample_seed",
    "select_cases",
]
