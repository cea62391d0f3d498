"""The home screen's table of cases: which of the run's cases it shows (a reactive
`CaseView`: filter, group and sort), their marks and triage states.

A merged night holds 100,000 cases: filtering and sorting run in SQL, the table knows how
many cases the view shows and holds only the pages of them near the screen, read from the
store in the view's order as they come into view (End reads the last page, not the rest).
"""

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
    CaseQuery,
    CaseView,
    breakdown,
    case_key,
    triage_text,
    verdicts_breakdown,
)
from redline.deciding.history import sparkline
from redline.presentation import OUTCOME_LABELS, OUTCOME_STYLES
from redline.running.store import RunStore
from redline.vocabulary.records import CaseRecord, TriageRecord
from redline.vocabulary.verdicts import VERDICT_ORDER
from redline_tui.cause_jobs import CauseJobs
from redline_tui.widgets.paged_table import PagedTable
from redline_tui.widgets.row_table import ColumnSpec, fit_columns

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


class CaseTable(PagedTable[Text]):
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

    class PageRead(Message):
        """A page of the view's rows was read from the store (their marks are not yet)."""

        def __init__(self, run_id: str, cases: list[CaseRecord]) -> None:
            super().__init__()
            self.run_id = run_id
            self.cases = cases

    def __init__(self, jobs: CauseJobs | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._jobs = jobs
        self.run_id = ""
        self._store: RunStore | None = None
        #: The cases of the rows held, by row key.
        self._cases: dict[str, CaseRecord] = {}
        self._query = CaseQuery()
        self._widths: dict[str, int] = {}
        self.marks: dict[str, CaseMarks] = {}
        self.triage: dict[str, TriageRecord] = {}
        #: The columns shown and their widths (those the terminal's width fits).
        self.shown_columns: dict[str, int] = {}

    def show_cases(
        self,
        store: RunStore,
        run_id: str,
        triage: Mapping[str, TriageRecord],
        widths: Mapping[str, int],
    ) -> None:
        """The run's cases, as the current view shows them (`widths`: `natural_widths`)."""
        self._store = store
        self.run_id = run_id
        self.triage = dict(triage)
        self._widths = dict(widths)
        self._refill()

    @property
    def shown(self) -> list[CaseRecord]:
        """The cases of the rows held (all of a small view's), in the view's order."""
        return [self._cases[str(key.value)] for key in self.held_keys()]

    @property
    def view_total(self) -> int:
        """How many cases the view shows in all (held or not)."""
        return self.row_count

    def forget_run(self) -> None:
        """Another run opens: its marks and columns are its own."""
        self.marks.clear()
        self._store = None
        self.clear(columns=True)

    def watch_view(self) -> None:
        self._refill()

    def _refill(self) -> None:
        if self._store is None:
            return
        if not self.columns:
            self._add_columns()
        selected = self.selected_case()
        self._query = self.view.query()
        self.show_rows(self._query.count(self._store, self.run_id))
        if self.row_count:
            self.row_key_at(0)  # the first page, read with the view
        if selected is not None:
            row = self._query.position(self._store, self.run_id, selected.suite, selected.case_id)
            if row is not None:
                self.move_cursor(row=row, animate=False)
        self.post_message(self.Refilled(self))

    def read_page(self, start: int, count: int) -> list[tuple[str, Sequence[Text]]]:
        """The view's rows `start` to `start + count`, from the store."""
        if self._store is None:
            return []
        cases = self._query.page(self._store, self.run_id, start, count, self.row_count)
        self._cases.update((case_key(c), c) for c in cases)
        if cases:
            self.post_message(self.PageRead(self.run_id, cases))
        return [(case_key(c), self._cells(c)) for c in cases]

    def let_go(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._cases.pop(key, None)

    def view_cases(self, query: CaseQuery | None = None) -> list[CaseRecord]:
        """Every case the view shows (read or not), or those of `query` narrowing it."""
        if self._store is None:
            return []
        return (query or self._query).page(self._store, self.run_id, 0)

    @property
    def case_query(self) -> CaseQuery:
        """The view as SQL: the cases it shows, in its order."""
        return self._query

    def _add_columns(self) -> None:
        """Widths from the whole run's data, read as aggregates (never case by case), the
        columns that fit the terminal by priority."""
        self.shown_columns = self.set_columns(self._specs())

    def _specs(self) -> list[ColumnSpec]:
        widths = {
            **self._widths,
            "outcome": 6,
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
        case = self._cases.get(row)
        if case is not None:
            self._set(row, "triage", self._triage_cell(case))

    def _triage_cell(self, case: CaseRecord) -> Text:
        key = (self.run_id, case.suite, case.case_id)
        jobs = self._jobs
        running = jobs is not None and jobs.running(key)
        live = jobs.progress(key) if jobs is not None else None
        return triage_text(self.triage.get(case_key(case)), live, running)

    def selected_case(self) -> CaseRecord | None:
        try:
            key = self.row_key_at(self.cursor_row) if self.row_count else None
        except LookupError:  # the run lost the row since it was counted
            key = None
        return None if key is None else self._cases.get(str(key.value))

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


def natural_widths(store: RunStore, run_id: str) -> dict[str, int]:
    """The data's widths of the case, tier, passes, required and verdicts columns over the
    whole run, from aggregates (the verdicts' from their distinct counts): read with the
    run, before its rows."""
    (case, tier, passes, required), *_ = store.case_values(
        run_id,
        "max(length(suite) + 1 + length(case_id)), max(length(tier)), "
        "max(length(passes || '/' || samples)), max(length(required))",
    )
    counts = store.case_values(run_id, "DISTINCT " + ", ".join(f"n_{v}" for v in VERDICT_ORDER))
    verdicts = max(
        (len(verdicts_breakdown(dict(zip(VERDICT_ORDER, row, strict=True)))) for row in counts),
        default=8,
    )
    return {
        "case": min(_CASE_WIDTH, case or 4),
        "tier": tier or 4,
        "passes": passes or 6,
        "required": required or 3,
        "verdicts": verdicts,
    }
