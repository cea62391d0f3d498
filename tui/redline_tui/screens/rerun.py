"""Step 1: why is this case red? The reference, what changed, each arm live, one conclusion.

The analysis runs in the app's background jobs (`CauseJobs`), not in this screen: leaving
the screen or the case does not stop it, and coming back shows where it is. A finished
or stopped analysis is read back from the store.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, ProgressBar, Static

from redline.deciding.cause import (
    ArmCounts,
    Cause,
    CauseAnalysis,
    CauseProgress,
    ChangeItem,
    Diagnosis,
    Settings,
    p_value_label,
)
from redline.deciding.reference import Reference
from redline.errors import RedlineError
from redline.presentation import CAUSE_STYLES
from redline.running.records import CaseRecord, RunRecord
from redline_tui.cause_jobs import case_key
from redline_tui.context import TriageContext
from redline_tui.messages import CauseProgressed, Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.key_bar import KeyBar


def reference_text(reference: Reference) -> Text:
    text = Text("Reference  ", style="bold")
    text.append(reference.short, style="bold cyan")
    if reference.branch:
        text.append(f" on {reference.branch}")
    if reference.date:
        text.append(f" · {reference.date[:16].replace('T', ' ')}")
    text.append(f"\n           {reference.reason}", style="dim")
    return text


def changes_text(changes: tuple[ChangeItem, ...], notes: tuple[str, ...] = ()) -> Text:
    text = Text("Changed    ", style="bold")
    if not changes:
        text.append("nothing that the case sees (prompt, model, case, vars, settings)")
    for i, change in enumerate(changes):
        text.append(", " if i else "")
        text.append(change.kind.value, style="bold")
        text.append(f" ({change.detail})")
    for note in notes:
        text.append(f"\n           {note}", style="yellow")
    return text


def where_text(diagnosis: Diagnosis) -> Text:
    """The reference and what changed, as Step 1 shows them above the arms."""
    text = reference_text(diagnosis.reference)
    text.append("\n")
    text.append_text(changes_text(diagnosis.changes, diagnosis.notes))
    return text


def arms_table(red: ArmCounts | None, arms: tuple[ArmCounts, ...], confidence: float) -> Table:
    """The red run and every arm side by side: counts, rate and interval."""
    table = Table(expand=True, show_edge=False, pad_edge=False)
    table.add_column("Arm", ratio=3)
    table.add_column("Passes", justify="right")
    table.add_column("Rate", justify="right")
    table.add_column(f"{confidence:.0%} interval", justify="right")
    table.add_column("Run")
    for arm in (*((red,) if red is not None else ()), *arms):
        if arm.skipped is not None:
            table.add_row(Text(arm.label), Text("skipped", style="dim"), "", "", "")
            continue
        low, high = arm.interval(confidence)
        rate = f"{arm.rate:.0%}" if arm.samples else "—"
        table.add_row(
            Text(arm.label),
            Text(f"{arm.passes}/{arm.samples}"),
            Text(rate),
            Text(f"{low:.0%}–{high:.0%}" if arm.samples else "—"),
            Text(arm.run_id or "—", style="dim"),
        )
    return table


def conclusion_text(diagnosis: Diagnosis) -> Text:
    text = Text()
    text.append(f" {diagnosis.cause.value} ", style=f"reverse {CAUSE_STYLES[diagnosis.cause]}")
    text.append("  ")
    text.append(diagnosis.sentence)
    if diagnosis.cause is Cause.NOISE:
        text.append("\nm raises its samples · t retires it (with a reason)", style="bold")
    for key, value in diagnosis.p_values.items():
        text.append(f"\np = {value:.3g}: {p_value_label(key)}", style="dim")
    return text


class RerunScreen(CaseStepScreen):
    """Step 1, live from the background job of this case (or from the store)."""

    STEP = Step.RERUN
    #: Digits and letters are step and action keys until the user tabs into a field.
    AUTO_FOCUS = ""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "start", "Find the cause"),
        Binding("x", "cancel", "Stop"),
        *STEP_BINDINGS,
    ]

    def __init__(self, ctx: TriageContext, run: RunRecord, case: CaseRecord) -> None:
        super().__init__(ctx, run, case)
        self.key = case_key(run, case)
        self.diagnosis: Diagnosis | None = None
        self._red: ArmCounts | None = None
        self._confidence = Settings.confidence

    @property
    def running(self) -> bool:
        jobs = self.ctx.jobs
        return jobs is not None and jobs.running(self.key)

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        with Vertical(id="rerun-form"), Horizontal():
            yield Label("Reference")
            yield Input(id="cause-reference", placeholder="derived from the run")
            yield Label("Samples per arm")
            yield Input(str(Settings.budget), id="cause-budget", type="integer")
        yield Static("", id="cause-where")
        yield ProgressBar(id="cause-bar", show_eta=False)
        yield Static("", id="cause-status")
        yield Static("", id="cause-arms")
        yield Static("", id="cause-conclusion")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#cause-bar").display = False
        jobs = self.ctx.jobs
        if jobs is not None and jobs.running(self.key):
            self._show_running(jobs.progress(self.key))
        self._load()

    @work(thread=True, exclusive=True, group="cause-load")
    def _load(self) -> None:
        """The stored diagnosis, else the plan (reference, changes, arms) without sampling."""
        stored = self.ctx.store.triage(self.run.id).get((self.case.suite, self.case.case_id))
        if stored is not None and stored.detail.get("conclusion"):
            diagnosis = Diagnosis.from_json(stored.detail)
            self.app.call_from_thread(self._loaded_diagnosis, diagnosis, stored.state)
            return
        if self.ctx.config is None:
            self.app.call_from_thread(
                self._status, "No redline config found: cannot rerun this case.", "bold red"
            )
            return
        try:
            with CauseAnalysis(self.ctx.store, self.ctx.config, self.run, self.case) as plan:
                where = reference_text(plan.reference)
                where.append("\n")
                where.append_text(changes_text(tuple(plan.changes), tuple(plan.notes)))
                red, arms = plan.red_counts(), plan.current()
        except RedlineError as exc:
            self.app.call_from_thread(self._status, str(exc), "bold red")
            return
        self.app.call_from_thread(self._loaded_plan, where, red, arms)

    def _loaded_diagnosis(self, diagnosis: Diagnosis, state: str) -> None:
        if not self.is_attached:
            return
        if self.running:  # a batch of the running analysis: its counts come live
            self._red = diagnosis.red
            self.query_one("#cause-where", Static).update(where_text(diagnosis))
            return
        self._show_diagnosis(diagnosis)
        if state == "stopped" or diagnosis.stopped:
            self._status(
                f"Stopped at {diagnosis.progress:.0%} of the budget; finished samples kept. "
                "r starts again."
            )
        else:
            self._status("Stored result; r runs the analysis again.")

    def _loaded_plan(self, where: Text, red: ArmCounts, arms: tuple[ArmCounts, ...]) -> None:
        if not self.is_attached:
            return
        self._red = red
        self.query_one("#cause-where", Static).update(where)
        if self.running:
            return
        self.query_one("#cause-arms", Static).update(arms_table(red, arms, self._confidence))
        if arms:
            self._status("Press r to rerun one change at a time until the evidence decides.")
        else:
            self._status("The case changed since the reference: r records that, nothing runs.")

    def _show_diagnosis(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        self._red = diagnosis.red
        self._confidence = diagnosis.confidence
        self.query_one("#cause-where", Static).update(where_text(diagnosis))
        self.query_one("#cause-arms", Static).update(
            arms_table(diagnosis.red, diagnosis.arms, diagnosis.confidence)
        )
        self.query_one("#cause-conclusion", Static).update(conclusion_text(diagnosis))
        self.query_one("#cause-bar").display = False

    def _show_running(self, progress: CauseProgress | None) -> None:
        bar = self.query_one("#cause-bar", ProgressBar)
        bar.display = True
        if progress is None:
            self._status("Preparing: reading the reference and the changes from git…")
            return
        bar.update(total=progress.total, progress=progress.done)
        self.query_one("#cause-arms", Static).update(
            arms_table(self._red, progress.arms, self._confidence)
        )
        self._status(
            f"running {progress.fraction:.0%} · {progress.done} of at most {progress.total} "
            "samples · runs in the background (x stops it)"
        )

    def _status(self, message: str, style: str = "") -> None:
        if self.is_attached:
            self.query_one("#cause-status", Static).update(Text(message, style=style))

    def cause_update(self, event: CauseProgressed) -> None:
        """Called by the app for every message of a background analysis."""
        if event.key != self.key or not self.is_attached:
            return
        if event.error is not None:
            self.query_one("#cause-bar").display = False
            self._status(event.error, "bold red")
        elif event.diagnosis is not None:
            self._show_diagnosis(event.diagnosis)
            if event.diagnosis.stopped:
                self._status(
                    f"Stopped at {event.diagnosis.progress:.0%} of the budget; finished samples "
                    "kept. r starts again."
                )
            else:
                self._status("Done: every arm is stored as a rerun linked to the red run.")
        else:
            self._show_running(event.progress)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    def action_start(self) -> None:
        jobs = self.ctx.jobs
        if self.running:
            self.notify("Already running in the background (x stops it)", severity="warning")
            return
        if self.ctx.config is None or jobs is None:
            self.notify("No redline config found: cannot rerun", severity="error")
            return
        budget_text = self.query_one("#cause-budget", Input).value.strip()
        if not budget_text.isdigit() or int(budget_text) < 1:
            self.notify("Samples per arm must be a whole number of at least 1", severity="error")
            return
        reference = self.query_one("#cause-reference", Input).value.strip() or None
        try:
            settings = Settings(budget=int(budget_text), reference=reference)
        except RedlineError as exc:
            self.notify(str(exc), severity="error")
            return
        self.set_focus(None)
        self.diagnosis = None
        self._confidence = settings.confidence
        self.query_one("#cause-conclusion", Static).update("")
        jobs.start(self.ctx.config, self.run, self.case, settings)
        self._show_running(None)

    def action_cancel(self) -> None:
        jobs = self.ctx.jobs
        if jobs is not None and jobs.cancel(self.key):
            self._status("Stopping… the finished samples are kept.")
