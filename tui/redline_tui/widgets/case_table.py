"""The home screen's table of cases: it owns the run's cases, their marks and triage
states, and which of them it shows (a reactive `CaseView`: filter, group and sort)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable

from redline.deciding.case_rows import (
    SORT_COLUMNS,
    TRIAGE_WIDTH,
    CaseMarks,
    CaseView,
    breakdown,
    case_key,
    triage_text,
)
from redline.deciding.history import sparkline
from redline.presentation import OUTCOME_LABELS, OUTCOME_STYLES
from redline.vocabulary.records import CaseRecord, TriageRecord
from redline_tui.cause_jobs import CauseJobs
from redline_tui.widgets.row_table import ColumnSpec, RowTable, fit_columns

_OUTCOME_LABELS = {
    outcome: Text(label, style=OUTCOME_STYLES[outcome]) for outcome, label in OUTCOME_LABELS.items()
}
#: The columns in display order, with how readily each gives way at 80 or 100 columns:
#: the result, case and pass count always show (the case name at its full width where
#: the terminal allows), then the triage state and verdicts, the history, the bar and
#: marks, the tier; the status line names what a narrow terminal leaves out.
_COLUMNS = (
    ("outcome", "Result", 0),
    ("triage", "Triage", 1),
    ("case", "Case", 0),
    ("passes", "Passes", 0),
    ("required", "Req", 3),
    ("marks", "Marks", 3),
    ("verdicts", "Verdicts", 1),
    ("history", "History", 2),
    ("tier", "Tier", 4),
)
_CASE_WIDTH = 34
_CASE_MIN = 22
_MARKS_WIDTH = 26
_MARKS_MIN = 12
_HISTORY_WIDTH = 10
_HISTORY_MIN = 6
#: Rows added before the first paint; more follow after each refresh.
_FIRST_ROWS = 100


class CaseTable(RowTable[Text]):
    """One row per case of the open run; `view` picks and orders the rows shown."""

    DEFAULT_CSS = """
    CaseTable { height: 1fr; }
    """

    #: Which cases are shown, in which order: a change re-renders the rows.
    view: reactive[CaseView] = reactive(CaseView(), init=False)

    class Refilled(Message):
        """The rows shown changed (a new view, or the run's cases arrived)."""

        def __init__(self, table: CaseTable) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> CaseTable:
            return self.table

    def __init__(self, jobs: CauseJobs | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._jobs = jobs
        self.run_id = ""
        self.all_cases: list[CaseRecord] = []
        self.shown: list[CaseRecord] = []
        self.marks: dict[str, CaseMarks] = {}
        self.triage: dict[str, TriageRecord] = {}
        #: The columns shown and their widths (those the terminal's width fits).
        self.shown_columns: dict[str, int] = {}
        self._generation = 0

    def show_cases(
        self, run_id: str, cases: list[CaseRecord], triage: Mapping[str, TriageRecord]
    ) -> None:
        """The run's cases, as the current view shows them."""
        self.run_id = run_id
        self.all_cases = cases
        self.triage = dict(triage)
        self._refill()

    def forget_run(self) -> None:
        """Another run opens: its marks and columns are its own."""
        self.marks.clear()
        self.clear(columns=True)

    def watch_view(self) -> None:
        self._refill()

    def _refill(self) -> None:
        if not self.columns:
            self._add_columns()
        selected = self.selected_case()
        self.shown = self.view.apply(self.all_cases)
        self.clear()
        self._generation += 1
        target = self.shown.index(selected) if selected in self.shown else None
        self._add_rows(self._generation, 0, target)
        self.post_message(self.Refilled(self))

    def _add_columns(self) -> None:
        """Widths from the data (a thousand rows must not be measured cell by cell), the
        columns that fit the terminal by priority."""
        self.shown_columns = self.set_columns(self._specs())

    def _specs(self) -> list[ColumnSpec]:
        cases = self.all_cases
        widths = {
            "outcome": 6,
            "case": min(_CASE_WIDTH, max((len(case_key(c)) for c in cases), default=4)),
            "tier": max((len(c.tier) for c in cases), default=4),
            "passes": max((len(f"{c.passes}/{c.samples}") for c in cases), default=6),
            "required": max((len(str(c.required)) for c in cases), default=3),
            "verdicts": max((len(breakdown(c)) for c in cases), default=8),
            "history": _HISTORY_WIDTH,
            "marks": _MARKS_WIDTH,
            "triage": TRIAGE_WIDTH,
        }
        shrink = {
            "case": min(_CASE_MIN, widths["case"]),
            "marks": _MARKS_MIN,
            "history": _HISTORY_MIN,
        }
        return [
            ColumnSpec(key, label, widths[key], priority, shrink.get(key))
            for key, label, priority in _COLUMNS
        ]

    @property
    def hidden_columns(self) -> list[str]:
        """The columns the terminal is too narrow for, as the status line names them."""
        return [
            label for key, label, _ in _COLUMNS if self.columns and key not in self.shown_columns
        ]

    def on_resize(self) -> None:
        """Another width may fit other columns: lay them out again (rows follow)."""
        if (
            self.columns
            and fit_columns(self._specs(), self.available_width()) != self.shown_columns
        ):
            self.clear(columns=True)
            self._refill()

    def _add_rows(self, generation: int, start: int, target: int | None) -> None:
        """The first screenful of rows paints at once; the rest follow in one batch after it."""
        if generation != self._generation or not self.is_attached:
            return
        end = min(start + _FIRST_ROWS, len(self.shown)) if start == 0 else len(self.shown)
        for case in self.shown[start:end]:
            self.add_row(*self._cells(case), key=case_key(case))
        if target is not None and start <= target < end:
            self.move_cursor(row=target, animate=False)
        if end < len(self.shown):
            self.call_after_refresh(self._add_rows, generation, end, target)

    def _cells(self, case: CaseRecord) -> list[Text]:
        mark = self.marks.get(case_key(case))
        cells = {
            "outcome": _OUTCOME_LABELS[case.result],
            "triage": self._triage_cell(case),
            "case": Text(case_key(case), overflow="ellipsis", no_wrap=True),
            "passes": Text(f"{case.passes}/{case.samples}"),
            "required": Text(str(case.required)),
            "marks": self._marks_cell(mark),
            "verdicts": Text(breakdown(case)),
            "history": self._history_cell(mark),
            "tier": Text(case.tier),
        }
        return [cells[key] for key in self.shown_columns]

    def _marks_cell(self, mark: CaseMarks | None) -> Text:
        text = mark.text() if mark else Text("")
        text.overflow, text.no_wrap = "ellipsis", True
        return text

    def _history_cell(self, mark: CaseMarks | None) -> Text:
        """The latest runs that fit the column, newest at the right."""
        if mark is None:
            return Text("…")
        return Text(sparkline(mark.history[-self.shown_columns.get("history", _HISTORY_WIDTH) :]))

    def _set(self, row: str, column: str, cell: Text) -> None:
        """Update a cell of a column the terminal shows (a hidden one has nothing to draw)."""
        if row in self.rows and column in self.shown_columns:
            self.update_cell(row, column, cell)

    def apply_marks(self, marks: Mapping[str, CaseMarks]) -> None:
        """History sparklines and marks, as they are read after the first paint."""
        self.marks.update(marks)
        for key, mark in marks.items():
            self._set(key, "history", self._history_cell(mark))
            self._set(key, "marks", self._marks_cell(mark))

    def set_triage(self, suite: str, case_id: str, record: TriageRecord | None) -> None:
        """A case's triage state changed (a conclusion, an action): its cell says so."""
        row = f"{suite}/{case_id}"
        if record is None:
            self.triage.pop(row, None)
        else:
            self.triage[row] = record
        self.redraw_triage(row)

    def redraw_triage(self, row: str) -> None:
        case = next((c for c in self.all_cases if case_key(c) == row), None)
        if case is not None:
            self._set(row, "triage", self._triage_cell(case))

    def _triage_cell(self, case: CaseRecord) -> Text:
        key = (self.run_id, case.suite, case.case_id)
        jobs = self._jobs
        running = jobs is not None and jobs.running(key)
        live = jobs.progress(key) if jobs is not None else None
        return triage_text(self.triage.get(case_key(case)), live, running)

    def selected_case(self) -> CaseRecord | None:
        if not self.shown or not 0 <= self.cursor_row < len(self.shown):
            return None
        return self.shown[self.cursor_row]

    def redraw_triages(self, cases: Sequence[CaseRecord]) -> None:
        """Redraw the triage cells of these cases (a batch queued them)."""
        for case in cases:
            self.redraw_triage(case_key(case))

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = str(event.column_key.value)
        if column in SORT_COLUMNS:
            self.view = self.view.sorted_by(column)
