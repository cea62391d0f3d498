"""The runs screen: recent runs with branch, commit, model and result; pick one.

It opens a run on the home screen, and picks either side of a comparison, so nobody
types a run id.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Static

from redline.presentation import RESULT_STYLES, short_model_id
from redline.vocabulary.records import RunKind, RunRecord
from redline_tui.context import TriageContext
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import ColumnSpec, RowTable, hidden_labels

#: How many recent runs the screen lists.
RECENT_RUNS = 500
#: (key, header, priority, least width when it may be cut): the run, when and its result
#: always show; the model id keeps its date at 80 columns, the suites give way first.
_COLUMNS = (
    ("id", "Run", 0, None),
    ("started", "Started (UTC)", 0, None),
    ("kind", "Kind", 1, None),
    ("result", "Result", 0, None),
    ("branch", "Branch", 2, 8),
    ("commit", "Commit", 3, None),
    ("model", "Model", 1, 16),
    ("suites", "Suites", 3, 8),
)


def middle_cut(text: str, width: int) -> str:
    """`openai:gpt-…-2026-01`: the start and the end of `text` in `width` cells."""
    if len(text) <= width or width < 3:
        return text[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


def run_result_text(run: RunRecord) -> Text:
    """`RED`, `GREEN`, `INCONCLUSIVE`, or the status of a run that did not finish."""
    if run.result is None:
        return Text(run.status.value, style="dim")
    return Text(run.result.value.upper(), style=RESULT_STYLES[run.result])


def run_kind_text(run: RunRecord) -> Text:
    """`run`, `↳rerun`, `↳replay`, or `⇄compare` for a model-migration candidate run."""
    if run.against is not None:
        return Text("⇄compare", style="italic magenta")
    if run.kind is RunKind.RUN:
        return Text(run.kind.value)
    return Text(f"↳{run.kind.value}", style="italic cyan")


def run_cells(run: RunRecord, current: str | None = None) -> list[Text]:
    marker = "▶ " if run.id == current else ""
    kind = run_kind_text(run)
    commit = (run.git_commit or "—")[:7] + ("*" if run.git_dirty else "")
    return [
        Text(marker + run.id, style="bold" if marker else ""),
        Text(run.started_at[:16].replace("T", " ")),
        kind,
        run_result_text(run),
        Text(run.git_branch or "—"),
        Text(commit),
        Text(short_model_id(run.model_id)),
        Text(", ".join(run.suites)),
    ]


class RunsRead(Message):
    """The loading worker read the recent runs."""

    def __init__(self, runs: list[RunRecord]) -> None:
        super().__init__()
        self.runs = runs


class RunsScreen(Screen[str | None]):
    """Recent runs, newest first; enter picks one, escape goes back without choosing."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "pick", "Pick"),
        Binding("escape", "back", "Back"),
        Binding("f", "toggle_reruns", "Reruns shown/hidden"),
    ]

    HELP: ClassVar[str] = (
        "Recent runs, newest first, ▶ on the current one: when it started, its result, the "
        "branch and commit it ran on (* = uncommitted changes), the model and suites. "
        "⇄compare marks a comparison run (run --against: the same cases on another model). "
        "Reruns are hidden unless f shows them. Enter picks the highlighted run."
    )

    DEFAULT_CSS = """
    RunsScreen #runs-table { height: 1fr; }
    """

    #: Reruns are listed too (hidden by default: the runs to open are scheduled runs).
    show_reruns: reactive[bool] = reactive(False, init=False)

    def __init__(self, ctx: TriageContext, title: str, current: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.title_text = title
        self.current = current
        self.all_runs: list[RunRecord] = []
        self.shown: list[RunRecord] = []
        self.table: RowTable[Text] = RowTable(id="runs-table")
        self.shown_columns: dict[str, int] = {}
        self.status = Static("Loading runs…", id="runs-status", classes="status-line")

    def compose(self) -> ComposeResult:
        yield Static(Text(self.title_text, style="bold"), id="runs-title", classes="step-title")
        yield self.table
        yield self.status
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="runs-load")
    def _load(self) -> None:
        runs = self.ctx.store.runs(limit=RECENT_RUNS)
        self.post_message(RunsRead(runs))

    @on(RunsRead)
    def _show(self, event: RunsRead) -> None:
        self.all_runs = event.runs
        self._fill()

    def _fill(self) -> None:
        table = self.table
        self.shown = [r for r in self.all_runs if self.show_reruns or r.kind is RunKind.RUN]
        if self.current is not None and all(r.id != self.current for r in self.shown):
            self.shown += [r for r in self.all_runs if r.id == self.current]
        rows = [run_cells(run, self.current) for run in self.shown]
        specs = [
            ColumnSpec(
                key,
                label,
                max((len(row[n].plain) for row in rows), default=len(label)),
                priority,
                least,
            )
            for n, (key, label, priority, least) in enumerate(_COLUMNS)
        ]
        self.shown_columns = table.set_columns(specs)
        keep = [n for n, (key, *_) in enumerate(_COLUMNS) if key in self.shown_columns]
        model_at = next(n for n, (key, *_) in enumerate(_COLUMNS) if key == "model")
        for run, row in zip(self.shown, rows, strict=True):
            for cell in row:
                cell.overflow, cell.no_wrap = "ellipsis", True
            if "model" in self.shown_columns:
                # Cut in the middle: a model id's date or version is at its end.
                row[model_at] = Text(middle_cut(row[model_at].plain, self.shown_columns["model"]))
            table.add_row(*(row[n] for n in keep), key=run.id)
        target = next((i for i, r in enumerate(self.shown) if r.id == self.current), 0)
        if self.shown:
            table.move_cursor(row=target, animate=False)
        reruns = "shown" if self.show_reruns else "hidden (f shows them)"
        hidden = hidden_labels(specs, self.shown_columns)
        narrow = f" · not shown at this width: {', '.join(hidden)}" if hidden else ""
        self.status.update(
            Text(f"{len(self.shown)} runs, newest first · reruns {reruns} · enter picks{narrow}")
        )

    def action_toggle_reruns(self) -> None:
        self.show_reruns = not self.show_reruns

    def watch_show_reruns(self) -> None:
        self._fill()

    @on(DataTable.RowSelected, "#runs-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick()

    def action_pick(self) -> None:
        row = self.table.cursor_row
        if 0 <= row < len(self.shown):
            self.dismiss(self.shown[row].id)

    def action_back(self) -> None:
        self.dismiss(None)
