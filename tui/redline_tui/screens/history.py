"""Step 3: the case's pass counts across runs; is it marginal, and what would decide it."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from redline.history import CaseHistory, HistoryPoint, Marginal, case_history, find_marginal
from redline.presentation import OUTCOME_STYLES
from redline.records import RunKind
from redline_tui.formatting import short_model_id
from redline_tui.messages import Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.key_bar import KeyBar

_BAR = 20
_RESULT_STYLES = OUTCOME_STYLES


def point_line(point: HistoryPoint, current_run: str) -> Text:
    """One bar: filled to the pass rate, `│` at the required count.

    The mark sits between cells, so it shows at the end of the bar too, where a
    contract case (every sample required) has it.
    """
    rerun = point.kind is not RunKind.RUN
    text = Text()
    text.append("▶ " if point.run_id == current_run else "  ", style="bold")
    text.append(f"{point.started_at[:16].replace('T', ' ')} ")
    kind = f"↳{point.kind.value}" if rerun else point.kind.value
    text.append(f"{kind:<7}", style="italic cyan" if rerun else "")
    text.append(f" {point.run_id[:12]:<12} ")
    filled = round(_BAR * point.passes / point.samples) if point.samples else 0
    bar_at = round(_BAR * point.required / point.samples) if point.samples else 0
    colour = _RESULT_STYLES[point.result].replace("bold ", "")
    for i in range(_BAR):
        if i == bar_at:
            text.append("│", style="bold")
        if i < filled:
            text.append("█", style=("cyan" if rerun else colour))
        else:
            text.append("░", style="dim")
    if bar_at >= _BAR:
        text.append("│", style="bold")
    text.append(f" {point.passes:>3}/{point.samples:<3} req {point.required:<3} ")
    text.append(point.result.value, style=_RESULT_STYLES[point.result])
    if point.model_changed:
        text.append("  ▲ model", style="bold magenta")
    if point.case_changed:
        text.append("  ◆ case file", style="bold yellow")
    return text


def changes_text(history: CaseHistory) -> Text:
    """What the ▲ and ◆ marks on the chart stand for, one line per change."""
    text = Text()
    previous: HistoryPoint | None = None
    for point in history.scheduled:
        if previous is not None and point.model_changed:
            text.append(
                f"▲ {point.run_id}: model {short_model_id(previous.model_id)} → "
                f"{short_model_id(point.model_id)}\n",
                style="magenta",
            )
        if previous is not None and point.case_changed:
            text.append(
                f"◆ {point.run_id}: the case file changed (a new case from here)\n", style="yellow"
            )
        previous = point
    return text


def marginal_text(history: CaseHistory, marginal: Marginal | None) -> Text:
    if not history.scheduled:
        return Text("No scheduled runs of this case yet.")
    if marginal is None:
        latest = history.scheduled[-1]
        return Text(
            f"Not marginal: the latest scheduled runs do not sit within one sample of the bar "
            f"({latest.passes}/{latest.samples}, {latest.required} required)."
        )
    text = Text("Marginal: ", style="bold yellow")
    text.append(
        f"within one sample of its bar for {marginal.runs} consecutive runs since "
        f"{marginal.since[:10]} (pooled {marginal.pooled_passes}/{marginal.pooled_samples} "
        f"= {marginal.rate:.0%}, bar {marginal.threshold:.0%}). "
    )
    if marginal.samples_needed is None:
        text.append(
            "More samples cannot separate its rate from the bar: retire it or change what it "
            "asserts."
        )
    else:
        text.append(
            f"About {marginal.samples_needed} samples per run would let a 95% interval "
            "decide it: raise its samples (m) or retire it (t)."
        )
    return text


class HistoryScreen(CaseStepScreen):
    """Pass counts as bars, scheduled runs and reruns apart, model and case changes marked."""

    STEP = Step.HISTORY
    BINDINGS = STEP_BINDINGS

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        with VerticalScroll(id="history-chart"):
            yield Static("Loading history…", id="history-bars")
        yield Static("", id="marginal")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#history-chart").border_title = "pass counts per run (│ = required)"
        self._load()

    @work(thread=True, exclusive=True, group="history-load")
    def _load(self) -> None:
        history = case_history(self.ctx.store, self.case.case_id, self.case.suite)
        self.app.call_from_thread(self._show, history)

    def _show(self, history: CaseHistory) -> None:
        if not self.is_attached:
            return
        self.history = history
        points = sorted(
            (*history.scheduled, *history.reruns), key=lambda p: (p.started_at, p.run_id)
        )
        lines = Text("\n").join(point_line(p, self.run.id) for p in points)
        self.query_one("#history-bars", Static).update(lines)
        self.marginal = find_marginal(history.scheduled)
        text = changes_text(history)
        text.append_text(marginal_text(history, self.marginal))
        self.query_one("#marginal", Static).update(text)
