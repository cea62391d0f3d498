"""Step 1: rerun the failing case on the unchanged prompt, with more samples."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

if TYPE_CHECKING:
    from redline.runner import RunProgress

from redline.budget import budget_note
from redline.errors import RedlineError
from redline.records import CaseRecord, RunRecord, RunStatus
from redline.rerun import (
    Conclusion,
    RerunComparison,
    compare_rerun,
    default_revision,
    default_samples,
    estimate_rerun,
    find_case,
    run_rerun,
    suite_at_revision,
)
from redline.usage import usd
from redline_tui.context import TriageContext
from redline_tui.messages import RerunStored, Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.dialogs import QuestionDialog
from redline_tui.widgets.key_bar import KeyBar

_CONCLUSION_STYLES = {
    Conclusion.CASE_AT_FAULT: "bold yellow",
    Conclusion.REGRESSION: "bold red",
    Conclusion.UNDECIDED: "bold",
}


def result_table(result: RerunComparison, run_id: str, revision: str) -> Table:
    table = Table(expand=True, show_edge=False)
    table.add_column(Text(f"current prompt (red run {run_id})"))
    table.add_column(Text(f"unchanged prompt ({revision})"))
    table.add_row(result.current.describe(), result.unchanged.describe())
    return table


class RerunScreen(CaseStepScreen):
    """Live progress from a worker; both rates with 95% intervals, Fisher p, one sentence."""

    STEP = Step.RERUN
    #: Digits and letters are step and action keys until the user tabs into a field.
    AUTO_FOCUS = ""
    #: This screen's own keys first: the footer is cut at the terminal's width.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "start", "Run rerun"),
        Binding("x", "cancel", "Cancel rerun"),
        *STEP_BINDINGS,
    ]

    def __init__(self, ctx: TriageContext, run: RunRecord, case: CaseRecord) -> None:
        super().__init__(ctx, run, case)
        self.result: RerunComparison | None = None
        self.rerun_id: str | None = None
        self.running = False

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        with Vertical(id="rerun-form"):
            with Horizontal():
                yield Label("Revision")
                yield Input(id="rerun-revision", placeholder="git revision of the prompt")
                yield Label("Samples")
                yield Input(
                    str(default_samples(self.case.samples)), id="rerun-samples", type="integer"
                )
            yield Static("", id="revision-note")
        yield ProgressBar(id="rerun-bar", show_eta=False)
        yield Static("Press r to rerun this case on the unchanged prompt.", id="rerun-progress")
        yield Static("", id="rerun-result")
        yield Static("", id="rerun-conclusion")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#rerun-bar").display = False
        self._prepare()

    @work(thread=True, exclusive=True, group="rerun-prepare")
    def _prepare(self) -> None:
        revision, why = default_revision(self.ctx.root)
        previous = self.ctx.reruns_of(self.run.id, self.case)
        cost = self._cost_note(default_samples(self.case.samples))
        self.app.call_from_thread(
            self._prepared, revision, why, previous[-1] if previous else None, cost
        )

    def _cost_note(self, samples: int, over: float | None = None) -> str:
        """The estimated cost of a rerun on a priced model ('' on the free local model, or
        when the estimate is not above `over`)."""
        config = self.ctx.config
        if config is None:
            return ""
        try:
            suite, case = find_case(config, self.case.suite, self.case.case_id)
            estimate = estimate_rerun(self.ctx.store, config, suite, case, self.run, samples)
        except RedlineError:
            return ""
        if estimate.price is None and estimate.model_id.startswith("local:"):
            return ""
        if over is not None and (estimate.cost is None or estimate.cost <= over):
            return ""
        each = estimate.cases[0].per_sample if estimate.cases else None
        per = f" (about {usd(each)} a sample)" if each is not None else ""
        budget = config.max_run_cost
        limit = f"; stops at max_run_cost {usd(budget)}" if budget is not None else ""
        return f"{estimate.describe()}{per}{limit}"

    def _prepared(
        self,
        revision: str,
        why: str,
        previous: tuple[RunRecord, CaseRecord] | None,
        cost: str = "",
    ) -> None:
        if not self.is_attached:
            return
        box = self.query_one("#rerun-revision", Input)
        if not box.value:
            box.value = revision
        note = Text(f"{revision}: {why}")
        if cost:
            note.append(f"\n{cost}")
        self.query_one("#revision-note", Static).update(note)
        if previous is not None and self.result is None:
            run, record = previous
            self._show_result(run, record, str(run.args.get("revision", "earlier rerun")))
            when = run.started_at[:16].replace("T", " ")
            stopped = (
                ""
                if run.status is RunStatus.FINISHED
                else f", {run.status.value} after {record.samples} sample(s)"
            )
            self.query_one("#rerun-progress", Static).update(
                Text(f"Showing the latest rerun {run.id} ({when}{stopped}); r runs again.")
            )

    def _show_result(self, rerun: RunRecord, record: CaseRecord, revision: str) -> None:
        self.rerun_id = rerun.id
        self.result = compare_rerun(self.case, record)
        self.query_one("#rerun-result", Static).update(
            result_table(self.result, self.run.id, revision)
        )
        conclusion = Text(f"p = {self.result.p_value:.3g} (one-sided Fisher)\n")
        conclusion.append(
            self.result.conclusion.value, style=_CONCLUSION_STYLES[self.result.conclusion]
        )
        self.query_one("#rerun-conclusion", Static).update(conclusion)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    def action_start(self) -> None:
        if self.running:
            self.notify("A rerun is already running (x cancels it)", severity="warning")
            return
        if self.ctx.config is None:
            self.notify("No redline config found: cannot rerun", severity="error")
            return
        revision = self.query_one("#rerun-revision", Input).value.strip() or "HEAD"
        samples_text = self.query_one("#rerun-samples", Input).value.strip()
        if not samples_text.isdigit() or int(samples_text) < 1:
            self.notify("Samples must be a whole number of at least 1", severity="error")
            return
        self.running = True
        self.set_focus(None)
        self._confirm_and_rerun(revision, int(samples_text))

    @work(exclusive=True, group="rerun-confirm")
    async def _confirm_and_rerun(self, revision: str, samples: int) -> None:
        """Ask first when the estimate is over `confirm_cost_above`, then start the rerun."""
        config = self.ctx.config
        threshold = config.confirm_cost_above if config is not None else None
        if threshold is not None:
            note = self._cost_note(samples, over=threshold)
            body = f"{note}\n\nThat is over confirm_cost_above ({usd(threshold)}). Rerun anyway?"
            if note and not await self.app.push_screen_wait(
                QuestionDialog("This rerun costs money", body, "Rerun")
            ):
                self.running = False
                self.query_one("#rerun-progress", Static).update(
                    Text("Rerun not started: nothing was sent.")
                )
                return
        self.query_one("#rerun-bar").display = True
        self.query_one("#rerun-bar", ProgressBar).update(total=samples, progress=0)
        self.query_one("#rerun-progress", Static).update(
            Text(f"Rerunning {self.case.case_id} × {samples} at {revision}…")
        )
        self._rerun(revision, samples)

    def action_cancel(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "rerun")
            self.query_one("#rerun-progress", Static).update(Text("Cancelling…"))

    @work(thread=True, exclusive=True, group="rerun")
    def _rerun(self, revision: str, samples: int) -> None:
        worker = get_current_worker()
        # Taken now: once the user leaves this screen `self.app` no longer resolves in
        # this thread, and a progress callback that raised would leave the run `running`.
        app = self.app
        config = self.ctx.config
        assert config is not None

        def progress(p: RunProgress) -> None:
            # The app may have stopped; the samples are stored all the same.
            with contextlib.suppress(RuntimeError):
                app.call_from_thread(self._progress, p)

        try:
            suite, case = find_case(config, self.case.suite, self.case.case_id)
            unchanged = suite_at_revision(suite, self.ctx.root, revision)
            record = run_rerun(
                self.ctx.store,
                config,
                unchanged,
                case,
                self.run,
                samples,
                revision,
                progress,
                lambda: worker.is_cancelled,
                budget=config.max_run_cost,
            )
        except RedlineError as exc:
            app.call_from_thread(self._failed, str(exc))
            return
        except BaseException as exc:
            if worker.is_cancelled:
                if self.is_attached:
                    app.call_from_thread(self._failed, "Rerun cancelled; finished samples kept.")
                return
            app.call_from_thread(self._failed, f"Rerun failed: {exc!r}")
            return
        cases = self.ctx.store.cases(record.id)
        app.call_from_thread(self._finished, record, cases, revision)

    def _progress(self, progress: RunProgress) -> None:
        if not self.is_attached:
            return
        self.query_one("#rerun-bar", ProgressBar).update(
            total=progress.total, progress=progress.done
        )
        counts = "  ".join(f"{v.value} {n}" for v, n in progress.verdicts.items() if n)
        self.query_one("#rerun-progress", Static).update(
            Text(f"{progress.done}/{progress.total} samples  {counts}")
        )

    def _failed(self, message: str) -> None:
        if not self.is_attached:
            return
        self.running = False
        self.query_one("#rerun-progress", Static).update(Text(message, style="bold red"))

    def _finished(self, rerun: RunRecord, cases: list[CaseRecord], revision: str) -> None:
        if not self.is_attached:
            return
        self.running = False
        record = next((c for c in cases if c.case_id == self.case.case_id), None)
        if record is None:
            self._failed(f"rerun {rerun.id} stored no result for {self.case.case_id}")
            return
        stored = Text(f"Rerun {rerun.id} stored, linked to run {self.run.id}.")
        stopped = budget_note(rerun.args)
        if stopped is not None:
            stored.append(f" {stopped}.", style="bold yellow")
        self.query_one("#rerun-progress", Static).update(stored)
        self._show_result(rerun, record, revision)
        self.post_message(RerunStored(rerun.id, self.run.id))
