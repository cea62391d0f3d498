"""The arms of a cause analysis: which configurations are rerun, and the evidence of each.

One change is undone per arm: the reference prompt on the red run's model (when the prompt
or its generation settings changed), your prompt on the reference's model (when the pinned
model changed), and your configuration again. Every arm is a stored rerun linked to the
red run, and it also counts the samples already in the store for the same configuration
(the same `sample_configuration` value, within a recency window): last week's nightlies
are free samples. The red run itself, and the reference run that was chosen for passing,
are never counted: they were picked for their result.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from redline.config import PROVIDER_TYPES, Config, ModelRef
from redline.deciding.cause_target import model_arm_skipped, reference_arm_skipped
from redline.deciding.changes import Change, ChangeItem, SuiteAt, pinned, with_model
from redline.deciding.stats import wilson_interval
from redline.errors import UsageError
from redline.running.manifest import sample_configuration
from redline.running.store import RunStore
from redline.suite.cases import Suite
from redline.targets.factory import UNPINNED
from redline.vocabulary.records import RunKind, RunRecord
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.running.budget import Estimate
    from redline.running.options import RunOptions
    from redline.running.runner import RunProgress


#: Samples an arm draws at a look at least (or all of the look, if fewer), so that its
#: stored evidence is checked against samples drawn now.
LEAST_DRAWN = 10
#: With stored evidence, Step 1 plans to bring every arm to this many times the budget in
#: all (stored + drawn): 120 samples at the default 40, where a difference of two rates
#: near 80% is measured to about ±5 points and "noise on balance" tells a harmless change
#: from a 20-point drop (`bench/sim_triage.py`), drawing at most MOST_DRAWN times the
#: budget per arm (on average over one model's arms).
EVIDENCE_PER_ARM = 3.0
#: The most Step 1 draws per arm with stored evidence, as a multiple of the budget.
MOST_DRAWN = 2.0


class ArmKind(StrEnum):
    REFERENCE_PROMPT = "reference-prompt"
    REFERENCE_MODEL = "reference-model"
    RED = "red-configuration"


@dataclass(frozen=True)
class StoredRun:
    """One stored run whose samples of the arm's configuration count toward the arm."""

    run_id: str
    kind: str
    started_at: str
    passes: int
    samples: int
    #: The case's bar in that run: (samples, required).
    bar: tuple[int, int] = (0, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "started_at": self.started_at,
            "passes": self.passes,
            "samples": self.samples,
            "bar": list(self.bar),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoredRun:
        bar = data.get("bar") or (0, 0)
        return cls(
            run_id=str(data["run_id"]),
            kind=str(data.get("kind", "")),
            started_at=str(data.get("started_at", "")),
            passes=int(data["passes"]),
            samples=int(data["samples"]),
            bar=(int(bar[0]), int(bar[1])),
        )


@dataclass(frozen=True)
class ArmCounts:
    """One arm as it stands: what it changes, its stored run, its pass count.

    `passes` and `samples` include the stored evidence (`stored`); the rest was drawn by
    the arm's own rerun (`run_id`).
    """

    kind: ArmKind
    label: str
    model_id: str
    revision: str
    passes: int = 0
    samples: int = 0
    run_id: str | None = None
    skipped: str | None = None
    stored: tuple[StoredRun, ...] = ()
    #: The most samples the arm's rerun draws in this analysis (`look_shares` at the budget).
    most: int = 0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        return wilson_interval(self.passes, self.samples, confidence)

    @property
    def rate(self) -> float:
        return self.passes / self.samples if self.samples else 0.0

    @property
    def stored_counts(self) -> tuple[int, int]:
        """(passes, samples) of the stored evidence alone."""
        return sum(r.passes for r in self.stored), sum(r.samples for r in self.stored)

    @property
    def drawn_counts(self) -> tuple[int, int]:
        """(passes, samples) drawn by this arm's rerun."""
        passes, samples = self.stored_counts
        return self.passes - passes, self.samples - samples

    def to_json(self, confidence: float = 0.95) -> dict[str, Any]:
        low, high = self.interval(confidence)
        stored_passes, stored_samples = self.stored_counts
        return {
            "label": self.label,
            "kind": self.kind.value,
            "passes": self.passes,
            "samples": self.samples,
            "interval": [round(low, 4), round(high, 4)],
            "run_id": self.run_id,
            "model": self.model_id,
            "revision": self.revision,
            "skipped": self.skipped,
            "stored_passes": stored_passes,
            "stored_samples": stored_samples,
            "stored_runs": [r.to_json() for r in self.stored],
            "most_drawn": self.most,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArmCounts:
        return cls(
            kind=ArmKind(data["kind"]),
            label=str(data["label"]),
            model_id=str(data.get("model", "")),
            revision=str(data.get("revision", "")),
            passes=int(data["passes"]),
            samples=int(data["samples"]),
            run_id=data.get("run_id"),
            skipped=data.get("skipped"),
            stored=tuple(StoredRun.from_json(r) for r in data.get("stored_runs", ())),
            most=int(data.get("most_drawn", 0)),
        )


@dataclass
class Arm:
    """An arm being drawn: the suite and config its rerun runs with, its counts so far."""

    kind: ArmKind
    label: str
    suite: Suite
    config: Config
    alias: str
    model_id: str
    revision: str
    run_id: str | None = None
    passes: int = 0
    samples: int = 0
    verdicts: dict[Verdict, int] = field(default_factory=dict)
    stored: tuple[StoredRun, ...] = ()
    most: int = 0

    def configuration(self, case_id: str) -> str:
        """The arm's `sample_configuration`: stored results with it count toward the arm."""
        return sample_configuration(self.suite, self.suite.case(case_id), self.model_id)

    def options(self, target: int, where: DrawTarget) -> RunOptions:
        """The rerun that brings this arm to `target` drawn samples (or extends it)."""
        from redline.running.runner import RunOptions

        return RunOptions(
            samples=target,
            case_ids=(where.case_id,),
            kind=RunKind.RERUN,
            parent_id=where.red_run,
            model_alias=self.alias,
            resume=self.run_id,
            extend=self.run_id is not None,
            budget=where.budget,
            args={
                "triage": True,
                "arm": self.kind.value,
                "label": self.label,
                "revision": self.revision,
                "case": where.case_id,
            },
        )

    def estimate(self, target: int, where: DrawTarget) -> Estimate:
        """What drawing this arm to `target` samples is estimated to cost."""
        from redline.running.runner import estimate_run

        return estimate_run([self.suite], self.config, where.store, self.options(target, where))

    def counts(self, live: Mapping[Verdict, int] | None = None) -> ArmCounts:
        passes = self.passes + sum(r.passes for r in self.stored)
        samples = self.samples + sum(r.samples for r in self.stored)
        if live:
            passes += live.get(Verdict.OK, 0)
            samples += sum(
                n for v, n in live.items() if v not in (Verdict.TRUNCATED, Verdict.TRANSPORT)
            )
        return ArmCounts(
            self.kind,
            self.label,
            self.model_id,
            self.revision,
            passes,
            samples,
            self.run_id,
            stored=self.stored,
            most=self.most,
        )


def stored_evidence(
    store: RunStore,
    suite: str,
    case_id: str,
    configuration: str,
    *,
    since: str,
    exclude: set[str],
) -> tuple[StoredRun, ...]:
    """The stored results of one case with this sample configuration, oldest first.

    Runs and reruns started at `since` or later, with at least one content sample; not
    replays (they re-score old outputs, they draw nothing) and not the runs in `exclude`.
    """
    found: list[StoredRun] = []
    for run, record in store.case_history(case_id, suite):
        if record.config_hash != configuration or run.id in exclude:
            continue
        if run.kind is RunKind.REPLAY or run.started_at < since:
            continue
        if record.content_samples == 0:
            continue
        found.append(
            StoredRun(
                run.id,
                run.kind.value,
                run.started_at,
                record.passes,
                record.content_samples,
                (record.samples, record.required),
            )
        )
    return tuple(found)


def window_start(red: RunRecord, days: int) -> str:
    """The earliest start a stored run may have to count: `days` before the red run."""
    started = datetime.fromisoformat(red.started_at)
    return (started - timedelta(days=days)).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ArmPlan:
    """What `plan_arms` decided: the arms to draw (red last), those that cannot be, why."""

    arms: list[Arm]
    skipped: list[ArmCounts]
    notes: list[str]


def plan_arms(
    config: Config,
    run: RunRecord,
    red: SuiteAt,
    ref: SuiteAt | None,
    changes: Sequence[ChangeItem],
    reference_revision: str,
) -> ArmPlan:
    """One arm per change that can be undone, and the red configuration again."""
    kinds = {c.kind for c in changes}
    red_model = _callable(config, run.model_id)
    if red_model is None:
        raise UsageError(
            f"the red run's model {run.model_id} is not configured in "
            f"{config.source.name} any more; pin it again to rerun the case"
        )
    red_rev = (red.revision or "working tree")[:12]
    plan = ArmPlan([], [], [])
    if Change.CASE in kinds or Change.VARS in kinds or ref is None:
        return plan
    target = red.suite.target
    no_reference = reference_arm_skipped(target) if target is not None else None
    prompt_changed = Change.PROMPT in kinds or any(c.generation for c in changes)
    if prompt_changed and no_reference is not None:
        label = f"reference prompt ({reference_revision[:12]}) through {red.suite.target.label}"  # type: ignore[union-attr]
        plan.notes.append(no_reference)
        plan.skipped.append(
            ArmCounts(
                ArmKind.REFERENCE_PROMPT,
                label,
                run.model_id,
                reference_revision,
                skipped=no_reference,
            )
        )
    elif prompt_changed:
        suite = dataclasses.replace(
            red.suite,
            system_template=ref.suite.system_template,
            user_template=ref.suite.user_template,
            prompt_files=ref.suite.prompt_files,
            messages=ref.suite.messages,
            tools=ref.suite.tools,
            tool_choice=ref.suite.tool_choice,
            response_format=ref.suite.response_format,
            max_tokens=ref.suite.max_tokens,
            temperature=ref.suite.temperature,
            target=ref.suite.target,
            template_names=ref.suite.template_names,
        )
        label = f"reference prompt ({reference_revision[:12]}) on {pinned(run.model_id)}"
        plan.arms.append(
            _arm(
                config,
                ArmKind.REFERENCE_PROMPT,
                label,
                suite,
                red_model,
                run.model_id,
                reference_revision,
            )
        )
    no_model = model_arm_skipped(target) if target is not None else None
    if Change.MODEL in kinds and ref.model_id is not None:
        label = f"your prompt on the reference model {pinned(ref.model_id)}"
        model = _callable(config, ref.model_id)
        if no_model is not None:
            plan.notes.append(no_model)
            plan.skipped.append(
                ArmCounts(ArmKind.REFERENCE_MODEL, label, ref.model_id, red_rev, skipped=no_model)
            )
        elif model is not None:
            plan.arms.append(
                _arm(
                    config,
                    ArmKind.REFERENCE_MODEL,
                    label,
                    red.suite,
                    model,
                    ref.model_id,
                    red_rev,
                )
            )
        else:
            provider = ref.model_id.split(":", 1)[0]
            reason = (
                f"the reference model {ref.model_id} is not configured any more (no provider "
                f"{provider!r} in {config.source.name}), so this arm was skipped"
            )
            plan.notes.append(reason)
            plan.skipped.append(
                ArmCounts(ArmKind.REFERENCE_MODEL, label, ref.model_id, red_rev, skipped=reason)
            )
    label = f"your configuration again ({red_rev}, {pinned(run.model_id)})"
    plan.arms.append(_arm(config, ArmKind.RED, label, red.suite, red_model, run.model_id, red_rev))
    return plan


def _arm(
    config: Config,
    kind: ArmKind,
    label: str,
    suite: Suite,
    model: ModelRef,
    model_id: str,
    revision: str,
) -> Arm:
    arm_config = with_model(config, suite.model, f"{model.provider}:{model.name}")
    return Arm(kind, label, suite, arm_config, suite.model, model_id, revision)


def _callable(config: Config, model_id: str) -> ModelRef | None:
    model = pinned(model_id)
    if ":" not in model:
        return None
    provider, name = model.split(":", 1)
    if provider == UNPINNED:
        return ModelRef(alias="", provider=provider, name=name)
    if provider not in config.providers and provider not in PROVIDER_TYPES:
        return None
    return ModelRef(alias="", provider=provider, name=name)


@dataclass(frozen=True)
class DrawTarget:
    """Where the arms' reruns are stored: linked to the red run, one case, a cost cap."""

    store: RunStore
    red_run: str
    case_id: str
    budget: float | None


def look_shares(arms: Sequence[tuple[str, int]], look: int, budget: int) -> list[int]:
    """Samples each arm has drawn at a look of `look` samples per arm (of `budget`), for
    arms given as (model id, stored samples).

    What the arms on one model draw in all (`group_draws`) is spread evenly over the looks
    and shared where it tells most: every arm draws at least LEAST_DRAWN (or `look`, if
    smaller), enough to check that its stored evidence still holds, and the rest goes to
    the arm with the fewest samples in all (stored + drawn). The variance of a difference
    of rates is smallest when both arms hold about as many samples, so a reference with two
    weeks of stored nightlies leaves most of the draws to the rerun of your configuration.
    Samples never move to another model, whose price differs. `look_shares(arms, budget,
    budget)` is the most each arm draws: what Step 1's cost estimate counts.
    """
    drawn = [min(look, LEAST_DRAWN)] * len(arms)
    planned = len(arms) > 1 and any(n for _, n in arms)
    for model in {m for m, _ in arms}:
        group = [i for i, (m, _) in enumerate(arms) if m == model]
        total = group_draws([arms[i][1] for i in group], budget, planned) * look // budget
        for _ in range(total - sum(drawn[i] for i in group)):
            fewest = min(group, key=lambda i: (arms[i][1] + drawn[i], -i))
            drawn[fewest] += 1
    return drawn


def group_draws(stored: Sequence[int], budget: int, planned: bool) -> int:
    """The most the arms on one model (given by their stored samples) draw in all.

    `budget` per arm, unless `planned`: when an analysis compares arms and some arm holds
    stored evidence, "noise on balance" can be decided at the last look, and Step 1 plans
    for the evidence that needs — enough to bring every arm to EVIDENCE_PER_ARM × `budget`
    samples in all (stored + drawn), never less than `budget` per arm and at most
    MOST_DRAWN × `budget` per arm. The thinner the stored evidence, the more is drawn.
    """
    least = budget * len(stored)
    if not planned:
        return least
    target = round(EVIDENCE_PER_ARM * budget)
    needed = sum(max(min(budget, LEAST_DRAWN), target - n) for n in stored)
    return min(max(least, needed), round(MOST_DRAWN * least))


def arm_evidence(arms: Sequence[Arm]) -> list[tuple[str, int]]:
    """The arms as `look_shares` takes them: (model id, stored samples)."""
    return [(a.model_id, sum(r.samples for r in a.stored)) for a in arms]


def draw_arms(
    arms: Sequence[Arm],
    target: int,
    budget: int,
    where: DrawTarget,
    on_live: Callable[[Mapping[ArmKind, Mapping[Verdict, int]]], None],
    cancelled: Callable[[], bool],
) -> bool:
    """Bring the arms' reruns to a look of `target` samples per arm (of `budget`), shared
    out by `look_shares`, side by side; True when cancelled.

    `on_live` gets each arm's verdict counts of the batch in flight.
    """
    shares = look_shares(arm_evidence(arms), target, budget)
    live: dict[ArmKind, Mapping[Verdict, int]] = {}

    def report(arm: Arm) -> Callable[[RunProgress], None]:
        def on_progress(p: RunProgress) -> None:
            arm.run_id = p.run_id
            live[arm.kind] = p.verdicts
            on_live(live)

        return on_progress

    async def main() -> bool:
        draws = (_draw_arm(a, n, where, report(a)) for a, n in zip(arms, shares, strict=True))
        task = asyncio.gather(*draws)
        while not task.done():
            if cancelled():
                task.cancel()
                break
            await asyncio.wait({task}, timeout=0.1)
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    try:
        return asyncio.run(main())
    finally:
        _refresh(arms, where)


async def _draw_arm(
    arm: Arm, target: int, where: DrawTarget, on_progress: Callable[[RunProgress], None]
) -> None:
    """Run (or extend) the arm's rerun of the case up to `target` samples."""
    from redline.running.runner import execute_run

    if arm.samples >= target and arm.run_id is not None:
        return
    await execute_run([arm.suite], arm.config, where.store, arm.options(target, where), on_progress)


def _refresh(arms: Sequence[Arm], where: DrawTarget) -> None:
    for arm in arms:
        if arm.run_id is None:
            continue
        record = where.store.case(arm.run_id, arm.suite.name, where.case_id)
        if record is not None:
            arm.passes = record.passes
            arm.samples = record.content_samples
            arm.verdicts = dict(record.verdicts)
