"""Step 3: the case's pass counts across runs; is it marginal, and what would decide it.

One row per run: when, which run, its branch and commit, and a chart of its pass rate
with the 95% interval around it, beside the sparkline of the series. Runs of other
branches than the triaged run's are dimmed (b hides them): a branch's experiments
say nothing about this branch's history.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from redline.deciding.history import (
    CaseHistory,
    HistoryPoint,
    Marginal,
    case_history,
    find_marginal,
    sparkline,
)
from redline.deciding.stats import wilson_interval
from redline.presentation import OUTCOME_STYLES, short_model_id
from redline.vocabulary.records import CaseRecord, RunKind, RunRecord
from redline_tui.context import TriageContext
from redline_tui.messages import Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import RowTable

_BAR = 20
#: What the chart's glyphs stand for, shown under it.
CHART_LEGEND = (
    "█ pass rate (the part beyond its 95% interval's low end is ▓) · ─ rest of the "
    "interval · │ required"
)
_COLUMNS = (
    ("when", "When (UTC)"),
    ("run", "Run"),
    ("chart", "Pass rate, 95% interval"),
    ("passes", "Passes"),
    ("result", "Result"),
    ("marks", "▲◆"),
    ("branch", "Branch@commit"),
)


def rate_chart(point: HistoryPoint) -> Text:
    """A bar of `_BAR` cells: filled to the pass rate, the rate's 95% Wilson interval drawn
    over it, `│` between the cells where the required count sits (at the end too, where a
    contract case, every sample required, has it)."""
    rerun = point.kind is not RunKind.RUN
    colour = "cyan" if rerun else OUTCOME_STYLES[point.result].replace("bold ", "")
    content = point.content_samples or point.samples
    filled = round(_BAR * point.passes / content) if content else 0
    low, high = wilson_interval(point.passes, content) if content else (0.0, 0.0)
    low_cell, high_cell = int(low * _BAR), round(high * _BAR)
    bar_at = round(_BAR * point.required / point.samples) if point.samples else 0
    text = Text()
    for i in range(_BAR):
        if i == bar_at:
            text.append("│", style="bold")
        if i < filled:
            text.append("▓" if i >= low_cell else "█", style=colour)
        elif i < high_cell:
            text.append("─", style=colour)
        else:
            text.append("░", style="dim")
    if bar_at >= _BAR:
        text.append("│", style="bold")
    return text


def point_cells(point: HistoryPoint, current_run: str, run: RunRecord | None) -> list[Text]:
    rerun = point.kind is not RunKind.RUN or point.against is not None
    marker = "▶ " if point.run_id == current_run else "  "
    kind = "⇄" if point.against is not None else ("↳" if rerun else "")
    marks = ("▲" if point.model_changed else "") + ("◆" if point.case_changed else "")
    branch = "—"
    if run is not None:
        branch = f"{run.git_branch or 'no branch'}@{(run.git_commit or '—')[:7]}"
    content = point.content_samples or point.samples
    return [
        Text(marker + point.started_at[5:16].replace("T", " "), style="bold" if marker else ""),
        Text(kind + point.run_id, style="italic cyan" if rerun else ""),
        rate_chart(point),
        Text(f"{point.passes}/{content}"),
        Text(point.result.value, style=OUTCOME_STYLES[point.result]),
        Text(marks, style="bold magenta"),
        Text(branch),
    ]


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


class HistoryRead(Message):
    """The loading worker read the case's history and the runs it spans."""

    def __init__(self, history: CaseHistory, runs: dict[str, RunRecord]) -> None:
        super().__init__()
        self.history = history
        self.runs = runs


class HistoryScreen(CaseStepScreen):
    """Pass rates per run with intervals, scheduled runs and reruns apart, model and case
    changes marked, other branches dimmed or hidden."""

    STEP = Step.HISTORY
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "toggle_branches", "Other branches"),
        *STEP_BINDINGS,
    ]

    HELP: ClassVar[str] = (
        "One row per run of this case, oldest first, ▶ on the run being triaged; ↳ marks a "
        "rerun, ⇄ a comparison run (another model on the same cases, kept out of the trend). "
        "The chart: " + CHART_LEGEND + ". ▲ = the model changed at that run, "
        "◆ = the case file changed (a new case from there).\n"
        "Runs of other branches than this run's are dimmed; b hides or shows them. "
        "A marginal case gets more samples (m) or is retired (t): noise is not a regression."
    )

    DEFAULT_CSS = """
    HistoryScreen #history-trend, HistoryScreen #marginal { height: auto; padding: 0 1; }
    HistoryScreen #history-table { height: 1fr; }
    """

    #: Runs of other branches than this run's are hidden (else dimmed).
    hide_other_branches: reactive[bool] = reactive(False, init=False)

    def __init__(self, ctx: TriageContext, run: RunRecord, case: CaseRecord) -> None:
        super().__init__(ctx, run, case)
        self.history: CaseHistory | None = None
        self.marginal: Marginal | None = None
        self.runs: dict[str, RunRecord] = {}
        self.shown: list[HistoryPoint] = []
        self.trend = Static("Loading history…", id="history-trend")
        self.table: RowTable[Text] = RowTable(id="history-table", zebra_stripes=False)
        for key, label in _COLUMNS:
            self.table.add_column(label, key=key)
        self.marginal_note = Static("", id="marginal")

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        yield self.trend
        yield self.table
        yield self.marginal_note
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="history-load")
    def _load(self) -> None:
        history = case_history(self.ctx.store, self.case.case_id, self.case.suite)
        ids = {p.run_id for p in (*history.scheduled, *history.reruns)}
        runs = {r.id: r for r in self.ctx.store.runs() if r.id in ids}
        self.post_message(HistoryRead(history, runs))

    @on(HistoryRead)
    def _show(self, event: HistoryRead) -> None:
        history = event.history
        self.history = history
        self.runs = event.runs
        self._fill()
        self.marginal = find_marginal(history.scheduled)
        text = changes_text(history)
        text.append_text(marginal_text(history, self.marginal))
        self.marginal_note.update(text)

    def _other_branch(self, point: HistoryPoint) -> bool:
        run = self.runs.get(point.run_id)
        mine = self.run.git_branch
        return run is not None and mine is not None and run.git_branch not in (None, mine)

    def _fill(self) -> None:
        assert self.history is not None
        points = sorted(
            (*self.history.scheduled, *self.history.reruns),
            key=lambda p: (p.started_at, p.run_id),
        )
        others = sum(1 for p in points if self._other_branch(p))
        self.shown = [p for p in points if not (self.hide_other_branches and self._other_branch(p))]
        table = self.table
        table.clear()
        for point in self.shown:
            cells = point_cells(point, self.run.id, self.runs.get(point.run_id))
            if self._other_branch(point):
                for cell in cells:
                    cell.stylize("dim")
            table.add_row(*cells, key=point.run_id)
        current = next((i for i, p in enumerate(self.shown) if p.run_id == self.run.id), None)
        if current is not None:
            table.move_cursor(row=current, animate=False)
        rates = [p.rate for p in self.history.scheduled if not self._other_branch(p)]
        trend = Text("Trend ", style="bold")
        trend.append(sparkline(rates[-30:]) or "—")
        branch = self.run.git_branch or "no branch"
        if others:
            state = "hidden" if self.hide_other_branches else "dimmed"
            trend.append(f"  ({branch}; {others} run(s) of other branches {state}, b toggles)")
        else:
            trend.append(f"  ({branch})")
        trend.append("\n" + CHART_LEGEND, style="dim")
        self.trend.update(trend)

    def action_toggle_branches(self) -> None:
        if self.history is None:
            return
        points = (*self.history.scheduled, *self.history.reruns)
        others = sum(1 for p in points if self._other_branch(p))
        if not others:
            branch = self.run.git_branch or "no branch"
            self.notify(f"Every run of this case is on {branch}: no other branch to hide")
            return
        self.hide_other_branches = not self.hide_other_branches
        state = "hidden" if self.hide_other_branches else "shown, dimmed"
        self.notify(f"{others} run(s) of other branches {state}")

    def watch_hide_other_branches(self) -> None:
        if self.history is not None:
            self._fill()
