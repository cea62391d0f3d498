"""A run's record from start to close: opened new or reopened for a resume, each case's
result stored at the end (or at an interrupt), and the run closed.

`case_result` is the one rule deciding a case from its samples, for `redline run` and
`pytest cases/` alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from redline.errors import UsageError
from redline.gitio import repo_branch, repo_state
from redline.running.budget import Budget
from redline.running.manifest import (
    SuiteParts,
    case_hash,
    input_in_words,
    sample_configuration,
    suite_manifest,
)
from redline.running.options import RunOptions
from redline.running.planning import Plan
from redline.running.quarantine import QUARANTINED_ARG, active_quarantines, quarantined
from redline.running.seeds import FROZEN_SEEDS_ARG, frozen_seeds
from redline.running.store import RunStore, now_iso
from redline.version import __version__
from redline.vocabulary.outcome import add_counts, case_outcome, run_result
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
)
from redline.vocabulary.sequential import SequentialDraw
from redline.vocabulary.verdicts import NON_CONTENT_VERDICTS, VERDICT_ORDER, Verdict

if TYPE_CHECKING:
    from redline.config import Config, ModelRef
    from redline.providers.ratelimit import RateLimiter
    from redline.suite.cases import Case, Suite

#: The run argument listing how a run was completed after it first finished.
RETRIES_ARG = "retries"


def run_manifest(suites: Sequence[Suite], model_id: str) -> dict[str, str]:
    """Hashes of every input of every suite in the run (docs/rules.md: Hash manifest)."""
    manifest: dict[str, str] = {}
    for suite in suites:
        manifest.update(suite_manifest(suite, model_id))
    return manifest


def open_record(
    suites: Sequence[Suite],
    config: Config,
    store: RunStore,
    options: RunOptions,
    identity: str,
    model: ModelRef | None,
    run_id: str,
) -> RunRecord:
    """The run's record: a new one with id `run_id`, or the resumed run's (its redrawn
    samples set aside)."""
    manifest = run_manifest(suites, identity)
    if options.resume is None:
        return _new_record(config, options, suites, identity, model, manifest, run_id)
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


def _new_record(
    config: Config,
    options: RunOptions,
    suites: Sequence[Suite],
    identity: str,
    model: ModelRef | None,
    manifest: Mapping[str, str],
    run_id: str,
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
        id=run_id,
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
    stopped = stopped or PROVIDER_DOWN_ARG in record.args
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
            f"inputs changed since run {record.id} started "
            f"({', '.join(input_in_words(key) for key in changed[:5])}"
            f"{', ...' if len(changed) > 5 else ''}); a resume would mix evidence: "
            "start a new run"
        )
    return record


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


@dataclass(frozen=True)
class CaseResult:
    """A case's result as its record states it."""

    outcome: CaseOutcome
    #: The passes its rule asks of the samples counted: for a sequentially sampled case,
    #: the fewest that its test calls a pass at that sample count.
    required: int
    #: The samples the result counts, per verdict.
    verdicts: Mapping[Verdict, int]
    #: Samples drawn after a sequential test had stopped: stored, not counted.
    uncounted: int = 0
    #: A sequentially sampled case's bar and margin (None for a fixed count).
    bar: float | None = None
    margin: float | None = None

    @property
    def samples(self) -> int:
        return sum(self.verdicts.values())

    @property
    def passes(self) -> int:
        return self.verdicts.get(Verdict.OK, 0)


def case_result(
    case: Case,
    samples: int,
    verdicts: Mapping[Verdict, int],
    draw: SequentialDraw | None = None,
) -> CaseResult:
    """A case's result from its stored verdicts: its sequential draw's decision (on the
    samples up to it), or its pass rate over the `samples` planned (those not drawn count
    as transport). `redline run` and `pytest cases/` decide a case with this."""
    if draw is not None:
        decision = draw.decision()
        counted = (
            {v: draw.counts.get(v, 0) for v in VERDICT_ORDER}
            if decision is not None
            else dict(verdicts)
        )
        content = sum(n for v, n in counted.items() if v not in NON_CONTENT_VERDICTS)
        return CaseResult(
            decision or CaseOutcome.INCONCLUSIVE,
            draw.plan.passes_to_pass(content),
            counted,
            uncounted=max(0, sum(verdicts.values()) - sum(counted.values())),
            bar=draw.plan.bar,
            margin=draw.plan.margin,
        )
    required = case.required_for(samples)
    stored = sum(verdicts.values())
    undecided = dict(verdicts)
    undecided[Verdict.TRANSPORT] = undecided.get(Verdict.TRANSPORT, 0) + max(0, samples - stored)
    return CaseResult(case_outcome(required, undecided), required, dict(verdicts))


class CaseInputs:
    """Each case's hash and sample configuration, as its result records them.

    `ahead` works them out while the run draws its samples, one case per turn of the
    event loop (in time the loop would mostly spend waiting for answers), so closing
    the run does not read and hash every case file after the last sample; a case it has
    not reached is worked out when asked.
    """

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self._folders: dict[str, str] = {}
        self._shared: dict[int, SuiteParts] = {}
        self._done: dict[tuple[str, str], tuple[str, str]] = {}

    def case_hash(self, suite: Suite, case: Case) -> str:
        return self._of(suite, case)[0]

    def configuration(self, suite: Suite, case: Case) -> str:
        return self._of(suite, case)[1]

    def _of(self, suite: Suite, case: Case) -> tuple[str, str]:
        key = (case.suite, case.id)
        found = self._done.get(key)
        if found is None:
            found = self._done[key] = (
                case_hash(case, self._folders),
                sample_configuration(suite, case, self.model_id, self._shared),
            )
        return found

    async def ahead(self, cases: Iterable[tuple[Suite, Case, int]]) -> None:
        for suite, case, _ in cases:
            await asyncio.sleep(0)
            try:
                self._of(suite, case)
            except Exception:
                return  # a file gone meanwhile: closing the run says so, asking again


def finish_run(
    store: RunStore,
    run_id: str,
    model_id: str,
    plan: Plan,
    *,
    interrupted: bool,
    budget: Budget | None = None,
    down: str | None = None,
    rate_limit: RateLimiter | None = None,
    inputs: CaseInputs | None = None,
) -> RunRecord:
    """Store each case's result and the run's, and close the run; `down` is why the
    circuit breaker stopped it (the run is then inconclusive and can be resumed);
    `rate_limit` is the provider's limiter, whose story the run keeps when it has one;
    `inputs` holds the case hashes worked out while the run drew its samples."""
    counts = store.verdict_counts(run_id)
    records: list[CaseRecord] = []
    not_run: dict[str, int] = {}
    inputs = inputs or CaseInputs(model_id)
    for suite, case, samples in plan.cases:
        verdicts = counts.get((case.suite, case.id))
        stored = sum(verdicts.values()) if verdicts is not None else 0
        seq = plan.sequential.get((case.suite, case.id))
        draw = seq.draw if seq is not None else None
        if stored < samples and (draw is None or draw.decision() is None):
            not_run[f"{case.suite}/{case.id}"] = samples - stored
        if verdicts is not None:
            result = case_result(case, samples, verdicts, draw)
            records.append(
                CaseRecord(
                    run_id=run_id,
                    suite=case.suite,
                    case_id=case.id,
                    tier=case.tier,
                    model_id=model_id,
                    samples=result.samples,
                    required=result.required,
                    passes=result.passes,
                    result=result.outcome,
                    verdicts=result.verdicts,
                    case_hash=inputs.case_hash(suite, case),
                    config_hash=inputs.configuration(suite, case),
                    uncounted=result.uncounted,
                    bar=result.bar,
                    margin=result.margin,
                )
            )
    store.put_cases(records)
    result_of_run: RunResult | None = None
    if not interrupted:
        held = quarantined(store.run(run_id))
        counted = [r for r in records if f"{r.suite}/{r.case_id}" not in held]
        result_of_run = run_result(
            (r.result for r in counted), add_counts(r.verdicts for r in records)
        )
    _record_budget(store, run_id, budget, not_run)
    if budget is not None and budget.stopped and not interrupted:
        # Money ran out, not evidence: the samples not run could have gone either way.
        result_of_run = RunResult.INCONCLUSIVE
    _record_down(store, run_id, down)
    if rate_limit is not None and rate_limit.eventful:
        store.update_args(run_id, {**store.run(run_id).args, RATE_LIMIT_ARG: rate_limit.record()})
    if down is not None and not interrupted:
        result_of_run = RunResult.INCONCLUSIVE  # the provider failed, not the prompt
    status = RunStatus.INTERRUPTED if interrupted else RunStatus.FINISHED
    store.finish_run(run_id, status, result_of_run, now_iso())
    return store.run(run_id)


#: The run argument keeping what riding the provider's rate limit did (a resumed run
#: keeps its last part's).
RATE_LIMIT_ARG = "rate_limit"
#: The run argument saying why the circuit breaker stopped the run (the provider died).
PROVIDER_DOWN_ARG = "provider_down"


def _record_down(store: RunStore, run_id: str, down: str | None) -> None:
    recorded = store.run(run_id).args
    if down is None and PROVIDER_DOWN_ARG not in recorded:
        return
    args = {k: v for k, v in recorded.items() if k != PROVIDER_DOWN_ARG}
    if down is not None:
        args[PROVIDER_DOWN_ARG] = down
    store.update_args(run_id, args)


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
    "PROVIDER_DOWN_ARG",
    "RATE_LIMIT_ARG",
    "RETRIES_ARG",
    "CaseInputs",
    "CaseResult",
    "case_result",
    "finish_run",
    "open_record",
    "run_manifest",
]
