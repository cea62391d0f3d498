"""Step 1: why is this case red? The reference, what changed, each arm live, one conclusion.

The analysis runs in the app's background jobs (`CauseJobs`), not in this screen: leaving
the screen or the case does not stop it, and coming back shows where it is. A finished
or stopped analysis is read back from the store.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from redline.config import Config
from redline.deciding.cause import ArmCounts, CauseAnalysis, Diagnosis, Settings, StepEstimate
from redline.errors import RedlineError
from redline.running.usage import usd
from redline.vocabulary.causes import TriageState
from redline.vocabulary.records import CaseRecord, RunRecord
from redline_tui.cause_jobs import case_key
from redline_tui.context import TriageContext
from redline_tui.messages import CauseProgressed, Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.cause_panel import CauseForm, CausePanel, stopped_note, where_text
from redline_tui.widgets.dialogs import QuestionDialog
from redline_tui.widgets.key_bar import KeyBar


class DiagnosisRead(Message):
    """The store holds a conclusion (or a stopped analysis) for this case."""

    def __init__(self, diagnosis: Diagnosis, state: TriageState) -> None:
        super().__init__()
        self.diagnosis = diagnosis
        self.state = state


class PlanRead(Message):
    """No conclusion stored: the reference, the changes and the arms an analysis would draw,
    and what drawing them may cost (None for a model without a price)."""

    def __init__(
        self, where: Text, red: ArmCounts, arms: tuple[ArmCounts, ...], cost: str | None
    ) -> None:
        super().__init__()
        self.where = where
        self.red = red
        self.arms = arms
        self.cost = cost


class PlanFailed(Message):
    """The plan could not be made (no config, no reference): what to do instead."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class RerunScreen(CaseStepScreen):
    """Step 1, live from the background job of this case (or from the store)."""

    STEP = Step.RERUN
    #: Digits and letters are step and action keys until the user tabs into a field.
    AUTO_FOCUS = ""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "start", "Find the cause"),
        Binding("x", "cancel", "Stop"),
        *STEP_BINDINGS,
        Binding("j,down", "scroll('down')", "Scroll down", show=False),
        Binding("k,up", "scroll('up')", "Scroll up", show=False),
        Binding("pagedown", "scroll('page_down')", "Page down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", show=False),
        Binding("end,G", "scroll('end')", "To the conclusion", show=False),
        Binding("home,g", "scroll('home')", "To the top", show=False),
    ]

    def __init__(self, ctx: TriageContext, run: RunRecord, case: CaseRecord) -> None:
        super().__init__(ctx, run, case)
        self.key = case_key(run, case)
        self.diagnosis: Diagnosis | None = None
        self.form = CauseForm()
        self.panel = CausePanel()

    @property
    def running(self) -> bool:
        jobs = self.ctx.jobs
        return jobs is not None and jobs.running(self.key)

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        # One scrolled body: at 80x24 the conclusion sits below the fold and must be reachable.
        with VerticalScroll(id="rerun-body"):
            yield self.form
            yield self.panel
        yield KeyBar()

    def on_mount(self) -> None:
        jobs = self.ctx.jobs
        if jobs is not None and jobs.running(self.key):
            self.panel.show_running(jobs.progress(self.key))
        self._load()

    @work(thread=True, exclusive=True, group="cause-load")
    def _load(self) -> None:
        """The stored diagnosis, else the plan (reference, changes, arms) without sampling."""
        stored = self.ctx.store.triage(self.run.id).get((self.case.suite, self.case.case_id))
        if stored is not None and stored.detail.get("conclusion"):
            self.post_message(DiagnosisRead(Diagnosis.from_json(stored.detail), stored.state))
            return
        if self.ctx.config is None:
            self.post_message(PlanFailed("No redline config found: cannot rerun this case."))
            return
        try:
            with CauseAnalysis(self.ctx.store, self.ctx.config, self.run, self.case) as plan:
                where = where_text(plan.reference, tuple(plan.changes), tuple(plan.notes))
                red, arms = plan.red_counts(), plan.current()
                estimate = plan.estimate() if plan.arms else None
        except RedlineError as exc:
            self.post_message(PlanFailed(str(exc)))
            return
        cost = estimate.text if estimate is not None and estimate.priced else None
        self.post_message(PlanRead(where, red, arms, cost))

    @on(DiagnosisRead)
    def _loaded_diagnosis(self, event: DiagnosisRead) -> None:
        diagnosis = event.diagnosis
        if self.running:  # a batch of the running analysis: its counts come live
            where = where_text(diagnosis.reference, diagnosis.changes, diagnosis.notes)
            self.panel.show_where(where, diagnosis.red)
            return
        self._show_diagnosis(diagnosis)
        if event.state == TriageState.STOPPED or diagnosis.stopped:
            self.panel.status(stopped_note(diagnosis))
        else:
            self.panel.status("Stored result; r runs the analysis again.")

    @on(PlanRead)
    def _loaded_plan(self, event: PlanRead) -> None:
        self.panel.show_where(event.where, event.red)
        if self.running:
            return
        self.panel.show_plan(event.arms)
        if event.arms:
            cost = f" ({event.cost})" if event.cost else ""
            self.panel.status(
                f"Press r to rerun one change at a time until the evidence decides{cost}."
            )
        else:
            self.panel.status("The case changed since the reference: r records that, nothing runs.")

    @on(PlanFailed)
    def _plan_failed(self, event: PlanFailed) -> None:
        self.panel.status(event.message, "bold red")

    def _show_diagnosis(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        self.panel.show_diagnosis(diagnosis)

    def cause_update(self, event: CauseProgressed) -> None:
        """Called by the app for every message of a background analysis."""
        if event.key != self.key or not self.is_attached:
            return
        if event.error is not None:
            self.panel.failed(event.error)
        elif event.diagnosis is not None:
            self._show_diagnosis(event.diagnosis)
            if event.diagnosis.stopped:
                self.panel.status(stopped_note(event.diagnosis))
            else:
                self.panel.status("Done: every arm is stored as a rerun linked to the red run.")
        else:
            self.panel.show_running(event.progress)

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
        settings = self.form.settings()
        if isinstance(settings, str):
            self.notify(settings, severity="error")
            return
        self.set_focus(None)
        if self.ctx.config.confirm_cost_above is not None:
            self._start_if_confirmed(settings)
            return
        self._start(settings)

    def _start(self, settings: Settings) -> None:
        jobs, config = self.ctx.jobs, self.ctx.config
        if jobs is None or config is None:
            return
        self.diagnosis = None
        jobs.start(config, self.run, self.case, settings)
        self.panel.show_started(settings.confidence)

    def action_scroll(self, where: str) -> None:
        body = self.query_one("#rerun-body", VerticalScroll)
        move = {
            "down": body.scroll_down,
            "up": body.scroll_up,
            "page_down": body.scroll_page_down,
            "page_up": body.scroll_page_up,
            "end": body.scroll_end,
            "home": body.scroll_home,
        }[where]
        move(animate=False)

    @work(exclusive=True, group="cause-cost")
    async def _start_if_confirmed(self, settings: Settings) -> None:
        """Like `redline run`: over `confirm_cost_above`, start only when the user says so."""
        config = self.ctx.config
        if config is None or config.confirm_cost_above is None:
            return
        threshold = config.confirm_cost_above
        self.panel.status("Estimating what Step 1 may cost…")
        try:
            estimate = await asyncio.to_thread(self._estimate, config, settings)
        except RedlineError as exc:
            self.panel.failed(str(exc))
            return
        if estimate.cost is not None and estimate.cost > threshold:
            body = f"Step 1: {estimate.text}. That is over {usd(threshold)} (confirm_cost_above)."
            if not await self.app.push_screen_wait(
                QuestionDialog("Over the cost threshold", body, "Run it")
            ):
                self.panel.status("Not started: nothing was sent. Lower the samples per arm.")
                return
        self._start(settings)

    def _estimate(self, config: Config, settings: Settings) -> StepEstimate:
        with CauseAnalysis(self.ctx.store, config, self.run, self.case, settings) as plan:
            return plan.estimate()

    def action_cancel(self) -> None:
        jobs = self.ctx.jobs
        if jobs is not None and jobs.cancel(self.key):
            self.panel.status("Stopping… the finished samples are kept.")
