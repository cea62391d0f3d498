"""What a run draws: which cases, at how many samples each, and which samples are left.

`samples_for` is the one rule for a case's sample count (`--samples`, the reference run's
count under `--against`, else the case's own, a sequentially sampled case's most); the
cost estimate, the run and `pytest cases/` all plan through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from redline.casemodel import SUITE_FILE
from redline.errors import CaseNotFound, UsageError, relpath
from redline.running.options import RunOptions
from redline.running.pipeline import SampleJob, costly
from redline.running.seeds import sample_seed
from redline.targets.factory import suites_target, unpinned
from redline.vocabulary.sequential import SequentialDraw, SequentialPlan, adaptive_plan
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.config import Config, ModelRef
    from redline.running.store import RunStore
    from redline.suite.cases import Case, Suite


@dataclass
class SequentialCase:
    """One sequentially sampled case of a run: its draw, and how its jobs are made."""

    suite: Suite
    case: Case
    draw: SequentialDraw
    seeds: Callable[[int], int | None]
    costly: bool

    def jobs(self, indices: Iterable[int]) -> list[SampleJob]:
        return [SampleJob(self.suite, self.case, i, self.seeds(i), self.costly) for i in indices]

    def more(self) -> list[SampleJob]:
        return self.jobs(self.draw.more())


@dataclass
class Plan:
    """Which cases run, at how many samples each, and which samples are still to do.

    For a sequentially sampled case `todo` holds its first `min` samples (or what a
    resumed run still lacks); the schedule adds more while the case is undecided, and its
    entry in `cases` is its `max`.
    """

    cases: list[tuple[Suite, Case, int]]
    todo: list[SampleJob]
    sequential: dict[tuple[str, str], SequentialCase] = field(default_factory=dict)

    @property
    def most(self) -> int:
        """The samples this plan may still draw: exact without sequential cases."""
        undecided = (s.draw for s in self.sequential.values() if s.draw.decision() is None)
        return len(self.todo) + sum(d.plan.max - d.drawn for d in undecided)


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
    if not chosen and (options.shard is None or options.case_ids):
        # A shard holds only its own cases: none of the tier there is an empty run.
        raise UsageError("no case left to run after the --case/--tier filters")
    if options.shard is not None:
        # A shard may own no case (3 cases over 2 shards can all hash into one): that is
        # an empty, valid run, so the CI matrix job still exports a result to merge.
        from redline.suite.shards import select  # CI only: kept off a plain run's start-up

        kept = {(c.suite, c.id) for c in select((c for _, c in chosen), *options.shard)}
        chosen = [(s, c) for s, c in chosen if (c.suite, c.id) in kept]
    return chosen


class Sampled(Protocol):
    """What a case's sample count is decided from (a `Case`, or validate's count of one)."""

    @property
    def suite(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def tier(self) -> Tier: ...
    @property
    def samples(self) -> int: ...
    @property
    def required(self) -> int: ...
    @property
    def sampling(self) -> SequentialPlan | None: ...


def sampling_plan(case: Sampled, adaptive: bool) -> SequentialPlan | None:
    """The case's sequential plan: its own, or `--adaptive`'s for a fixed-N case."""
    if case.sampling is not None:
        return case.sampling
    if adaptive:
        return adaptive_plan(case.tier, case.samples, case.required)
    return None


def samples_for(options: RunOptions, case: Sampled) -> tuple[int, SequentialPlan | None]:
    """How many samples a case gets in this run, and its sequential plan when it has one
    (then the count is its most)."""
    fixed = options.samples or options.case_samples.get(f"{case.suite}/{case.id}")
    if fixed:
        return fixed, None
    sequential = sampling_plan(case, options.adaptive)
    return (sequential.max if sequential is not None else case.samples), sequential


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
            most, _ = samples_for(options, case)
            n = sum(1 for i in range(most) if (case.suite, case.id, i) not in done)
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
    mixed = mixed_models(suites)
    if mixed is not None:
        raise UsageError(mixed)
    return config.model(suites[0].model)


def mixed_models(suites: Sequence[Suite]) -> str | None:
    """Why these suites cannot be one run (a run records one pinned model), naming each
    suite's `model:` line and the commands that run them; None when they share a model."""
    aliases = sorted({s.model for s in suites if s.model})
    if len(aliases) < 2:
        return None
    where = "; ".join(f"{_model_line(s)}: model {s.model} (suite {s.name})" for s in suites)
    commands = ", ".join(
        "`redline run " + " ".join(relpath(s.path) for s in suites if s.model == alias) + "`"
        for alias in aliases
    )
    return (
        f"these suites pin different models ({where}), and a run records one model: "
        f"run them one model at a time ({commands}) or pick one for all with --model ALIAS"
    )


def _model_line(suite: Suite) -> str:
    """`cases/a/suite.yaml:4`, where the suite names its model."""
    path = suite.path / SUITE_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return relpath(path)
    number = next((n for n, line in enumerate(lines, 1) if line.startswith("model:")), None)
    return f"{relpath(path)}:{number}" if number is not None else relpath(path)


def plan_run(
    chosen: Sequence[tuple[Suite, Case]],
    options: RunOptions,
    run_id: str,
    stored: Mapping[tuple[str, str], Mapping[int, Verdict]] | None = None,
    replayed: Mapping[tuple[str, str], Mapping[int, int | None]] | None = None,
) -> Plan:
    """The samples to draw: a replay's are the replayed run's (`replayed`), any other
    run's the case's fixed or sequential count; a resume skips what is `stored` already
    (index → verdict per case), and its sequential cases continue from those verdicts."""
    stored = stored or {}
    plan = Plan([], [])
    for suite, case in chosen:
        key = (case.suite, case.id)
        have = stored.get(key, {})
        if replayed is not None:
            _plan_replayed(plan, suite, case, replayed.get(key, {}), have)
            continue
        n, sequential = samples_for(options, case)

        def seeds(i: int, suite: Suite = suite, case: Case = case) -> int | None:
            return sample_seed(run_id, case.suite, case.id, i, frozen=suite.seed)

        if sequential is None:
            plan.cases.append((suite, case, n))
            heavy = costly(case)
            plan.todo.extend(
                SampleJob(suite, case, i, seeds(i), heavy) for i in range(n) if i not in have
            )
            continue
        seq = SequentialCase(suite, case, SequentialDraw(sequential), seeds, costly(case))
        _plan_sequential(plan, seq, have)
    if chosen and replayed is not None and not plan.cases:
        raise UsageError("the replayed run has no stored samples for the selected cases")
    return plan


def _plan_replayed(
    plan: Plan,
    suite: Suite,
    case: Case,
    seeds: Mapping[int, int | None],
    have: Mapping[int, Verdict],
) -> None:
    """A replay draws exactly the samples the replayed run holds, with their seeds."""
    if not seeds:
        return
    plan.cases.append((suite, case, len(seeds)))
    heavy = costly(case)
    plan.todo.extend(
        SampleJob(suite, case, i, seed, heavy) for i, seed in seeds.items() if i not in have
    )


def _plan_sequential(plan: Plan, seq: SequentialCase, have: Mapping[int, Verdict]) -> None:
    """A sequentially sampled case starts with its `min` samples. A resumed one replays
    its stored verdicts batch by batch, as the first run drew them, up to the first batch
    that lacks samples, and draws what its batches lack (nothing once they decide it)."""
    draw = seq.draw
    plan.cases.append((seq.suite, seq.case, draw.plan.max))
    plan.sequential[(seq.case.suite, seq.case.id)] = seq
    draw.drawn = draw.plan.min
    batch = range(draw.drawn)
    while batch and all(i in have for i in batch):
        for i in batch:
            draw.add(i, have[i])
        batch = draw.more()
    for i in sorted(have):
        draw.add(i, have[i])
    if have:
        draw.drawn = max(draw.drawn, max(have) + 1)
    if draw.decision() is None:
        plan.todo.extend(seq.jobs(i for i in range(draw.drawn) if i not in have))


__all__ = [
    "Plan",
    "SequentialCase",
    "plan_run",
    "planned_samples",
    "run_model",
    "samples_for",
    "sampling_plan",
    "select_cases",
]
