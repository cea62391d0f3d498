"""Why is this case red? Your prompt change, the model, the case, drift, settings or noise.

The red run is compared with a reference point derived from the run itself
(`redline.deciding.reference`). What changed between the two is read from git
(`changes`); then one change at a time is undone in its own arm (`arms`), each arm counting
the stored samples of its configuration and drawing more in batches until the comparison
is decided (`decision`) or the budget is spent; the conclusion is put in words
(`explanation`). Every arm is a stored rerun linked to the red run, never mixed into its
counts. This module runs those steps for one case and keeps the triage state in the store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from redline.config import Config
from redline.deciding.arms import (
    Arm,
    ArmCounts,
    ArmKind,
    DrawTarget,
    StoredRun,
    arm_evidence,
    draw_arms,
    look_shares,
    plan_arms,
    stored_evidence,
    window_start,
)
from redline.deciding.changes import Change, ChangeItem, SuiteExport, find_changes
from redline.deciding.decision import (
    Bar,
    Decision,
    History,
    Settings,
    decide,
    decide_arms,
    look_by_look,
    samples_to_decide,
)
from redline.deciding.diagnosis import CauseProgress, Diagnosis, ProgressCallback
from redline.deciding.explanation import explain, p_value_label
from redline.deciding.reference import find_reference, red_run_commit
from redline.errors import CaseNotFound, UsageError
from redline.gitio import open_repo
from redline.running.store import RunStore, now_iso
from redline.running.usage import usd
from redline.vocabulary.causes import Cause, TriageState
from redline.vocabulary.records import CaseRecord, RunKind, RunRecord, SampleRecord, TriageRecord
from redline.vocabulary.verdicts import Verdict

#: Each arm in the cost estimate's few words.
_ARM_WORDS = {
    ArmKind.REFERENCE_PROMPT: "the reference prompt",
    ArmKind.REFERENCE_MODEL: "the reference model",
    ArmKind.RED: "your configuration",
}

#: What a provider says about itself on each sample, in words, as `provider_change` names it.
_SELF_DESCRIPTION = (
    ("model", "the response's model field"),
    ("system_fingerprint", "the system fingerprint"),
    ("server_version", "the server's version header"),
)


@dataclass(frozen=True)
class StepEstimate:
    """What Step 1 would cost at most; `cost` is None when a model has no price."""

    cost: float | None
    text: str
    priced: bool


class CauseAnalysis:
    """One red case: its reference, what changed, its arms. `run()` samples and decides.

    Blocking (call from a worker thread); holds the suites exported from git in a
    temporary folder until `close()`. Callable per case, so a batch of cases can be queued.
    """

    def __init__(
        self,
        store: RunStore,
        config: Config,
        run: RunRecord,
        case: CaseRecord,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.run_record = run
        self.case = case
        self.settings = settings or Settings()
        self._export = SuiteExport(config, case.suite)
        self.notes = self._export.notes
        try:
            self._prepare()
        except BaseException:
            self._export.close()
            raise

    def close(self) -> None:
        self._export.close()

    def __enter__(self) -> CauseAnalysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- preparation ---------------------------------------------------------------------

    def _prepare(self) -> None:
        run, case, export = self.run_record, self.case, self._export
        if run.kind is RunKind.REPLAY:
            raise UsageError(
                f"run {run.id} is a replay; triage the run it replays ({run.parent_id})"
            )
        with open_repo(self.config.root) as repo:
            red_commit = red_run_commit(repo, run)
            suite_dir = export.suite_dir(repo, red_commit)
            inputs = [suite_dir, *export.config_path(repo)]
            self.red = export.red_suite(repo, suite_dir, red_commit, run)
            self.reference = find_reference(
                repo,
                self.store,
                run,
                case.suite,
                case.case_id,
                self.settings.reference,
                inputs,
                uncommitted=self.red.revision is None,
            )
            ref = export.suite_at(repo, suite_dir, self.reference.revision, "reference")
        if ref is not None and self.reference.run is not None:
            ref.model_id = self.reference.run.model_id
        try:
            self.red_case = self.red.suite.case(case.case_id)
        except KeyError:
            raise CaseNotFound(
                f"case {case.case_id} is not in suite {case.suite} at the red run's commit "
                f"{red_commit[:12]}; pick a run whose commit has the case"
            ) from None
        self.ref = ref
        self.changes = find_changes(self.red, ref, case.case_id)
        self.bar = Bar(self.red_case.samples, self.red_case.required)
        plan = plan_arms(self.config, run, self.red, ref, self.changes, self.reference.revision)
        self.arms: list[Arm] = plan.arms
        self.skipped: list[ArmCounts] = plan.skipped
        self.notes.extend(plan.notes)
        self._count_stored_evidence()
        budget = self.settings.budget
        for arm, most in zip(
            self.arms, look_shares(arm_evidence(self.arms), budget, budget), strict=True
        ):
            arm.most = most
        self.history = self._history()
        self.provider_change = self._provider_change() if self.history.drift_possible else ""

    def _count_stored_evidence(self) -> None:
        """Every arm starts from the stored samples of its configuration in the window."""
        if not self.settings.window_days:
            return
        since = window_start(self.run_record, self.settings.window_days)
        exclude = {self.run_record.id}
        if self.reference.run is not None:
            exclude.add(self.reference.run.id)
        for arm in self.arms:
            arm.stored = stored_evidence(
                self.store,
                self.case.suite,
                self.case.case_id,
                arm.configuration(self.case.case_id),
                since=since,
                exclude=exclude,
            )

    def _history(self) -> History:
        red_arm = next((a for a in self.arms if a.kind is ArmKind.RED), None)
        started = self.run_record.started_at
        before = [r for r in red_arm.stored if r.started_at < started] if red_arm else []
        bar_only = all(c.kind is Change.SETTINGS and not c.generation for c in self.changes)
        return History(
            before=(sum(r.passes for r in before), sum(r.samples for r in before)),
            runs_before=len(before),
            red_run=(self.case.passes, self.case.content_samples),
            drift_possible=red_arm is not None and bar_only,
            old_bar=self._old_bar(before),
        )

    def _old_bar(self, before: list[StoredRun]) -> Bar | None:
        """The bar before a settings change: at the reference, else in the stored history."""
        if self.ref is not None:
            try:
                ref_case = self.ref.suite.case(self.case.case_id)
            except KeyError:
                ref_case = None
            if ref_case is not None:
                old = Bar(ref_case.samples, ref_case.required)
                if old != self.bar:
                    return old
        if self.red_case.sampling is not None:
            return None
        mine = (self.bar.samples, self.bar.required)
        for run in reversed(before):
            if run.bar != mine and run.bar[0] > 0:
                return Bar(*run.bar)
        return None

    def _provider_change(self) -> str:
        """What the provider says about itself, in the last stored run before the red run
        and in the red run, where that differs."""
        red_arm = next(a for a in self.arms if a.kind is ArmKind.RED)
        before = [r for r in red_arm.stored if r.started_at < self.run_record.started_at]
        if not before:
            return ""
        old = self._described(before[-1].run_id)
        new = self._described(self.run_record.id)
        found = []
        for name, words in _SELF_DESCRIPTION:
            if old.get(name) and new.get(name) and old[name] != new[name]:
                found.append(f"{words} {', '.join(old[name])} → {', '.join(new[name])}")
        return "; ".join(found)

    def _described(self, run_id: str) -> dict[str, list[str]]:
        samples = self.store.samples(run_id, self.case.case_id, self.case.suite)
        return {name: _values(samples, name) for name, _ in _SELF_DESCRIPTION}

    # -- sampling ------------------------------------------------------------------------

    def estimate(self) -> StepEstimate:
        """The estimated cost of drawing every arm to the most it draws: what Step 1 may
        spend."""
        where = self._where()
        estimates = [arm.estimate(arm.most, where) for arm in self.arms]
        samples = sum(e.samples for e in estimates)
        if any(e.price is None for e in estimates):
            unpriced = next(e for e in estimates if e.price is None)
            return StepEstimate(None, unpriced.describe(), priced=False)
        cost = sum(e.cost or 0.0 for e in estimates)
        plan = ", ".join(f"{_ARM_WORDS[arm.kind]} up to {arm.most}" for arm in self.arms)
        text = f"estimated cost {usd(cost)} for at most {samples} sample(s): {plan}"
        return StepEstimate(cost, text, priced=True)

    def _where(self) -> DrawTarget:
        return DrawTarget(
            self.store, self.run_record.id, self.case.case_id, self.config.max_run_cost
        )

    def red_counts(self) -> ArmCounts:
        case = self.case
        return ArmCounts(
            ArmKind.RED,
            f"red run {self.run_record.id}",
            self.run_record.model_id,
            (self.run_record.git_commit or "")[:12],
            case.passes,
            case.content_samples,
            self.run_record.id,
        )

    def current(self) -> tuple[ArmCounts, ...]:
        return (*(a.counts() for a in self.arms), *self.skipped)

    def run(
        self,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Diagnosis:
        """Sample the arms batch by batch until decided or out of budget; store each step.

        When `cancelled()` turns true, sampling stops: the samples finished so far are kept
        (in the arms' stored runs and in the returned diagnosis, marked `stopped`).
        """
        self._store_state(TriageState.RUNNING, 0.0, None)
        if not self.arms:
            diagnosis = self._diagnose(Decision(Cause.CASE_CHANGED, {}), final=True)
            self._store_state(TriageState.found(diagnosis.cause), 1.0, diagnosis)
            return diagnosis
        total = sum(a.most for a in self.arms)
        try:
            return self._sample(total, progress, cancelled)
        except BaseException:
            self._store_state(
                TriageState.STOPPED,
                self._drawn() / total,
                self._diagnose(Decision(Cause.UNDECIDED, {}), final=False, stopped=True),
            )
            raise

    def _drawn(self) -> int:
        return sum(a.samples for a in self.arms)

    def _sample(
        self, total: int, progress: ProgressCallback | None, cancelled: Callable[[], bool]
    ) -> Diagnosis:
        where = self._where()

        def on_live(live: Mapping[ArmKind, Mapping[Verdict, int]]) -> None:
            if progress is not None:
                counts = tuple(a.counts(live.get(a.kind)) for a in self.arms)
                done = sum(a.samples + sum(live.get(a.kind, {}).values()) for a in self.arms)
                progress(CauseProgress((*counts, *self.skipped), done, total))

        def after_look(decision: Decision) -> None:
            partial = self._diagnose(decision, final=False)
            self._store_state(TriageState.RUNNING, self._drawn() / total, partial)

        looked = look_by_look(
            self.settings,
            lambda target: draw_arms(
                self.arms, target, self.settings.budget, where, on_live, cancelled
            ),
            self._decide,
            # With the old model gone and the prompt unchanged, more samples cannot help.
            single_look=bool(self.skipped) and len(self.arms) == 1,
            after_look=after_look,
        )
        diagnosis = self._diagnose(looked.decision, final=looked.final, stopped=looked.stopped)
        done = self._drawn()
        if looked.stopped and diagnosis.cause is Cause.UNDECIDED:
            self._store_state(TriageState.STOPPED, done / total, diagnosis)
        else:
            self._store_state(TriageState.found(diagnosis.cause), 1.0, diagnosis)
        if progress is not None:
            progress(CauseProgress(self.current(), done, total, diagnosis.sentence))
        return diagnosis

    def _decide(self, alpha: float, final: bool) -> Decision:
        return decide_arms(
            [a.counts() for a in self.arms],
            self.bar,
            alpha,
            self.settings,
            model_untested=bool(self.skipped),
            history=self.history,
            final=final,
        )

    def _diagnose(self, decision: Decision, *, final: bool, stopped: bool = False) -> Diagnosis:
        arms = self.current()
        red = next((a for a in arms if a.kind is ArmKind.RED), self.red_counts())
        undo = [a for a in arms if a.kind is not ArmKind.RED and a.skipped is None]
        more = None
        empty = any(a.samples == 0 for a in (red, *undo))
        if (
            decision.cause is Cause.UNDECIDED
            and final
            and decision.why != "model-untested"
            and not empty
        ):
            looks = self.settings.looks
            alpha = self.settings.alpha_at(len(looks) - 1, len(looks))
            needed = samples_to_decide(red, undo, self.bar, alpha, self.settings.margin)
            current = max(a.samples for a in (red, *undo))
            more = None if needed is None else max(0, needed - current)
        diagnosis = Diagnosis(
            cause=decision.cause,
            sentence="",
            red_run=self.run_record.id,
            suite=self.case.suite,
            case_id=self.case.case_id,
            reference=self.reference,
            changes=tuple(self.changes),
            arms=arms,
            red=self.red_counts(),
            bar=self.bar,
            p_values=dict(decision.p_values),
            confidence=self.settings.confidence,
            margin=self.settings.margin,
            more_samples=more,
            notes=tuple(self.notes),
            stopped=stopped,
            budget=self.settings.budget,
            history=self.history,
            provider_change=self.provider_change,
        )
        return dataclasses.replace(diagnosis, sentence=explain(diagnosis, decision.why))

    def _store_state(
        self, state: TriageState, fraction: float, diagnosis: Diagnosis | None
    ) -> None:
        detail: dict[str, Any] = {}
        if diagnosis is not None:
            detail = diagnosis.to_json()
        self.store.put_triage(
            TriageRecord(
                run_id=self.run_record.id,
                suite=self.case.suite,
                case_id=self.case.case_id,
                state=state,
                progress=fraction,
                detail=detail,
                updated_at=now_iso(),
            )
        )


def _values(samples: list[SampleRecord], name: str) -> list[str]:
    return sorted({str(v) for s in samples if (v := getattr(s, name, None))})


def analyse(
    store: RunStore,
    config: Config,
    run: RunRecord,
    case: CaseRecord,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Diagnosis:
    """Find the cause of one red case (blocking): reference, changes, arms, conclusion."""
    with CauseAnalysis(store, config, run, case, settings) as analysis:
        return analysis.run(progress, cancelled)


__all__ = [
    "ArmCounts",
    "ArmKind",
    "Bar",
    "Cause",
    "CauseAnalysis",
    "CauseProgress",
    "Change",
    "ChangeItem",
    "Diagnosis",
    "Settings",
    "StepEstimate",
    "StoredRun",
    "analyse",
    "decide",
    "explain",
    "p_value_label",
    "samples_to_decide",
]
