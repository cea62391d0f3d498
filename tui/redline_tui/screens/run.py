"""Home: the run's header, verdict bar, a banner when the run is too noisy to judge, and
its cases, failing first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from redline.history import case_history, find_marginal, sparkline
from redline.outcome import add_counts, too_noisy
from redline.presentation import OUTCOME_LABELS, OUTCOME_STYLES
from redline.records import CaseOutcome, CaseRecord, RunRecord, TriageRecord
from redline.verdicts import VERDICT_ORDER, Verdict
from redline_tui.actions import start_case_action
from redline_tui.case_rows import (
    SORT_COLUMNS,
    TRIAGE_WIDTH,
    CaseFilter,
    breakdown,
    case_key,
    sort_cases,
    triage_text,
)
from redline_tui.context import TriageContext
from redline_tui.formatting import short_model_id
from redline_tui.messages import CaseKey, CauseProgressed, OpenStep, Step
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.runs import RunsScreen
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import RowTable
from redline_tui.widgets.verdict_bar import VerdictBar

_OUTCOME_LABELS = {
    outcome: Text(label, style=OUTCOME_STYLES[outcome]) for outcome, label in OUTCOME_LABELS.items()
}
#: What a triage needs first comes first: at 80-100 columns the last ones scroll.
_COLUMNS = (
    ("outcome", "Result"),
    ("triage", "Triage"),
    ("case", "Case"),
    ("passes", "Passes"),
    ("required", "Req"),
    ("marks", "Marks"),
    ("verdicts", "Verdicts"),
    ("history", "History"),
    ("tier", "Tier"),
)
#: Longer case names are cut with an ellipsis (the full name is in every step's title).
_CASE_WIDTH = 34
_HISTORY_WIDTH = 10
#: Rows added before the first paint; more follow after each refresh.
_FIRST_ROWS = 100


@dataclass(frozen=True)
class CaseMarks:
    history: tuple[float | None, ...]
    changed: bool
    marginal: bool

    def text(self) -> Text:
        text = Text()
        if self.changed:
            text.append("changed", style="bold magenta")
        if self.marginal:
            text.append(" marginal" if text else "marginal", style="bold yellow")
        return text


def header_text(run: RunRecord) -> Text:
    result = run.result.value.upper() if run.result else run.status.value
    style = {"RED": "bold red", "GREEN": "bold green"}.get(result, "bold yellow")
    commit = (run.git_commit or "no commit")[:10] + (" (dirty)" if run.git_dirty else "")
    text = Text()
    text.append(f"run {run.id}", style="bold")
    text.append(f" [{run.kind.value}] ")
    text.append(result, style=style)
    text.append("  suites: " + ", ".join(run.suites))
    # Short lines: the header keeps to 4 rows at 80 columns.
    text.append(f"\nmodel {short_model_id(run.model_id)}")
    text.append(f"\ncommit {commit}  ·  manifest: {len(run.manifest)} inputs hashed")
    text.append(f"\nstarted {_when(run.started_at)}  ·  finished {_when(run.finished_at)}")
    return text


def _when(stamp: str | None) -> str:
    return "—" if stamp is None else stamp[:16].replace("T", " ") + " UTC"


class RunScreen(Screen[None]):
    """The latest run: which cases failed, how, and since when."""

    AUTO_FOCUS = "#cases"
    #: Keys that act at once even while the run loads (the app's own).
    _IMMEDIATE_KEYS = frozenset({"q", "question_mark", "ctrl+p", "ctrl+c", "ctrl+q"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "open_step(1)",
            "Rerun",
            tooltip="Step 1 for the highlighted case: rerun it on the unchanged prompt",
        ),
        Binding("1", "open_step(1)", "Step 1 rerun", show=False, tooltip="Step 1: rerun"),
        Binding("2", "open_step(2)", "Outputs", tooltip="Step 2: read the raw outputs"),
        Binding("3", "open_step(3)", "History", tooltip="Step 3: the case's pass-rate history"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("slash", "filter", "Filter", tooltip="Filter the cases (language below)"),
        Binding(
            "v",
            "cycle_verdict",
            "Verdict",
            tooltip="Show only cases with a verdict: all → ok → wrong → malformed → … → all",
        ),
        Binding(
            "s",
            "cycle_sort",
            "Sort",
            tooltip="Sort by the next column (result, case, tier, passes, required); "
            "click a header to sort by it, again to reverse",
        ),
        Binding("c", "compare", "Compare", tooltip="Compare this run with an earlier one"),
        Binding("R", "runs", "Runs", tooltip="Open another run from the list of recent runs"),
        Binding(
            "m",
            "case_action('raise_samples')",
            "More samples",
            show=False,
            tooltip="Raise the case's samples (staged alone, with the diff shown first)",
        ),
        Binding(
            "t",
            "case_action('retire')",
            "Retire",
            show=False,
            tooltip="Retire the case, with a reason",
        ),
        Binding(
            "l",
            "case_action('loosen')",
            "Loosen",
            show=False,
            tooltip="Loosen one assertion, with a reason (never with a prompt change)",
        ),
        Binding(
            "a",
            "case_action('accept_baseline')",
            "Accept baseline",
            show=False,
            tooltip="Accept this run (or a rerun) as the case's new baseline",
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    HELP: ClassVar[str] = (
        "Filter (/): words match the case's suite/id, case-insensitive; "
        "v:VERDICT (or verdict:VERDICT) keeps cases with at least one sample of that verdict. "
        "A verdict may be shortened to any unambiguous start (v:malf, v:trunc, v:w).\n"
        "Examples:\n"
        "  /refund            cases whose id or suite holds 'refund'\n"
        "  /v:wrong           cases with a wrong sample\n"
        "  /invoice v:malf    malformed samples in the invoice suite\n"
        "  /0042              one case by its number\n"
        "Enter keeps the filter and returns to the table; Esc clears it. "
        "The status line under the table always shows the filter in force.\n"
        "Marks: changed = the case file differs from the accepted baseline's (a new case, "
        "not a regression); marginal = it has sat within one sample of its bar for runs."
    )

    def __init__(self, ctx: TriageContext, run_id: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self._run_id = run_id
        self.run: RunRecord | None = None
        self.all_cases: list[CaseRecord] = []
        self.shown: list[CaseRecord] = []
        self.marks: dict[str, CaseMarks] = {}
        self.triage: dict[str, TriageRecord] = {}
        self.case_filter = CaseFilter()
        self.sort_column = "outcome"
        self.sort_reverse = False
        self._generation = 0
        #: Keys typed before the run's rows were on screen, replayed once they are.
        self._early_keys: list[tuple[str, str | None]] = []
        self._loaded = False

    def compose(self) -> ComposeResult:
        with Vertical(id="run-top"):
            yield Static("Loading run…", id="run-header")
            yield VerdictBar(id="verdict-bar")
            yield Static("", id="noise-banner")
            yield Input(placeholder="filter: text, or v:wrong …", id="case-filter")
        yield RowTable[Text](id="cases")
        yield Static("", id="run-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#noise-banner").display = False
        self.query_one("#cases").focus()
        self._load()

    def on_key(self, event: events.Key) -> None:
        """Keys typed while the run loads wait for its rows: none is lost or lands in a
        hidden filter box."""
        if self._loaded or event.key in self._IMMEDIATE_KEYS:
            return
        self._early_keys.append((event.key, event.character))
        event.prevent_default()
        event.stop()

    def _replay_early_keys(self) -> None:
        self._loaded = True
        keys, self._early_keys = self._early_keys, []
        for key, character in keys:
            self.app.post_message(events.Key(key, character))

    @work(thread=True, exclusive=True, group="run-load")
    def _load(self) -> None:
        store = self.ctx.store
        run = store.run(self._run_id) if self._run_id else self.ctx.default_run()
        cases = store.cases(run.id) if run else []
        triage = store.triage(run.id) if run else {}
        self.app.call_from_thread(self._show_run, run, cases, triage)

    def _show_run(
        self,
        run: RunRecord | None,
        cases: list[CaseRecord],
        triage: dict[tuple[str, str], TriageRecord] | None = None,
    ) -> None:
        if not self.is_attached:
            return
        self.triage = {f"{s}/{c}": t for (s, c), t in (triage or {}).items()}
        if run is None:
            self.query_one("#run-header", Static).update(
                Text("No runs in the store yet: start with `redline run`.")
            )
            self._replay_early_keys()
            return
        self.run = run
        self.all_cases = cases
        self.query_one("#run-header", Static).update(header_text(run))
        counts = add_counts(c.verdicts for c in cases)
        self.query_one(VerdictBar).set_counts(counts)
        noisy = too_noisy(counts)
        banner = self.query_one("#noise-banner", Static)
        if noisy:
            banner.update(Text(f"Inconclusive: {noisy}. Rerun once the infrastructure is sound."))
        banner.display = noisy is not None
        self.refresh_table()
        self.call_after_refresh(self._replay_early_keys)
        self.call_after_refresh(self._load_marks, run, cases)

    @work(thread=True, exclusive=True, group="run-marks")
    def _load_marks(self, run: RunRecord, cases: Sequence[CaseRecord]) -> None:
        """History sparklines and marks: a store read per case, after the first paint."""
        batch: dict[str, CaseMarks] = {}
        for case in cases:
            series = [
                p
                for p in case_history(self.ctx.store, case.case_id, case.suite).scheduled
                if p.started_at <= run.started_at
            ]
            baseline = self.ctx.baseline(case.suite)
            accepted = None if baseline is None else baseline.cases.get(case.case_id)
            batch[case_key(case)] = CaseMarks(
                history=tuple(p.rate for p in series),
                changed=accepted is not None and accepted.case_hash != case.case_hash,
                marginal=find_marginal(series) is not None,
            )
            if len(batch) >= 200:
                self.app.call_from_thread(self._apply_marks, dict(batch))
                batch.clear()
        self.app.call_from_thread(self._apply_marks, batch)

    def _apply_marks(self, marks: dict[str, CaseMarks]) -> None:
        if not self.is_attached:
            return
        self.marks.update(marks)
        table = self.query_one("#cases", DataTable)
        for key, mark in marks.items():
            if key in table.rows:
                history = Text(sparkline(mark.history[-_HISTORY_WIDTH:]))
                table.update_cell(key, "history", history)
                table.update_cell(key, "marks", mark.text())

    def _add_columns(self, table: DataTable[Text]) -> None:
        """Fixed widths from the data: a thousand rows must not be measured cell by cell."""
        widths = {
            "outcome": 6,
            "case": min(_CASE_WIDTH, max((len(case_key(c)) for c in self.all_cases), default=4)),
            "tier": 8,
            "passes": max((len(f"{c.passes}/{c.samples}") for c in self.all_cases), default=6),
            "required": 3,
            "verdicts": max((len(breakdown(c)) for c in self.all_cases), default=8),
            "history": _HISTORY_WIDTH,
            "marks": len("changed marginal"),
            "triage": TRIAGE_WIDTH,
        }
        for key, label in _COLUMNS:
            table.add_column(label, key=key, width=max(widths[key], len(label)))

    def refresh_table(self) -> None:
        table: DataTable[Text] = self.query_one("#cases", DataTable)
        if not table.columns:
            self._add_columns(table)
        selected = self.selected_case()
        self.shown = sort_cases(
            self.case_filter.apply(self.all_cases), self.sort_column, self.sort_reverse
        )
        table.clear()
        self._generation += 1
        target = self.shown.index(selected) if selected in self.shown else None
        self._add_rows(self._generation, 0, target)
        failing = sum(1 for c in self.all_cases if c.result is CaseOutcome.FAIL)
        direction = " (reversed)" if self.sort_reverse else ""
        self.query_one("#run-status", Static).update(
            Text(
                f"{len(self.shown)} of {len(self.all_cases)} cases · {failing} failing · "
                f"filter: {self.case_filter.describe()} · sort: {self.sort_column}{direction}"
            )
        )

    def _add_rows(self, generation: int, start: int, target: int | None) -> None:
        """The first screenful of rows paints at once; the rest follow in one batch after it."""
        if generation != self._generation or not self.is_attached:
            return
        table: DataTable[Text] = self.query_one("#cases", DataTable)
        end = min(start + _FIRST_ROWS, len(self.shown)) if start == 0 else len(self.shown)
        for case in self.shown[start:end]:
            mark = self.marks.get(case_key(case))
            table.add_row(
                _OUTCOME_LABELS[case.result],
                self._triage_cell(case),
                Text(case_key(case), overflow="ellipsis", no_wrap=True),
                Text(f"{case.passes}/{case.samples}"),
                Text(str(case.required)),
                mark.text() if mark else Text(""),
                Text(breakdown(case)),
                Text(sparkline(mark.history[-_HISTORY_WIDTH:]) if mark else "…"),
                Text(case.tier),
                key=case_key(case),
            )
        if target is not None and start <= target < end:
            table.move_cursor(row=target, animate=False)
        if end < len(self.shown):
            self.call_after_refresh(self._add_rows, generation, end, target)

    def _triage_cell(self, case: CaseRecord) -> Text:
        key = (self.run.id if self.run else "", case.suite, case.case_id)
        jobs = self.ctx.jobs
        running = jobs is not None and jobs.running(key)
        live = jobs.progress(key) if jobs is not None else None
        return triage_text(self.triage.get(case_key(case)), live, running)

    def cause_update(self, event: CauseProgressed) -> None:
        """A background analysis of one of this run's cases moved on: redraw its cell."""
        if self.run is None or event.key[0] != self.run.id or not self.is_attached:
            return
        run_id, suite, case_id = event.key
        if event.diagnosis is not None:
            state = event.diagnosis.cause.value
            if event.diagnosis.stopped and state == "undecided":
                state = "stopped"
            progress = event.diagnosis.progress
            self.triage[f"{suite}/{case_id}"] = TriageRecord(
                run_id, suite, case_id, state, progress
            )
        elif event.error is not None:
            self.triage.pop(f"{suite}/{case_id}", None)
        self._redraw_triage(f"{suite}/{case_id}")

    def show_triage_state(self, key: CaseKey, state: str) -> None:
        """An action settled a case (retired, accepted): its cell says so."""
        if self.run is None or key[0] != self.run.id:
            return
        self.triage[f"{key[1]}/{key[2]}"] = TriageRecord(*key, state)
        self._redraw_triage(f"{key[1]}/{key[2]}")

    def _redraw_triage(self, row: str) -> None:
        table = self.query_one("#cases", DataTable)
        case = next((c for c in self.all_cases if case_key(c) == row), None)
        if case is not None and row in table.rows:
            table.update_cell(row, "triage", self._triage_cell(case))

    def selected_case(self) -> CaseRecord | None:
        table = self.query_one("#cases", DataTable)
        if not self.shown or table.cursor_row < 0 or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def action_open_step(self, step: int) -> None:
        case = self.selected_case()
        if case is None or self.run is None:
            self.notify("No case selected", severity="warning")
            return
        self.post_message(OpenStep(Step(step), self.run, case))

    def action_case_action(self, name: str) -> None:
        case = self.selected_case()
        if case is None or self.run is None:
            self.notify("No case selected", severity="warning")
            return
        start_case_action(self, self.ctx, self.run, case, name)

    @on(DataTable.RowSelected, "#cases")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_step(Step.RERUN)

    @on(DataTable.HeaderSelected, "#cases")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column not in SORT_COLUMNS:
            return
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self.refresh_table()

    def action_cursor_down(self) -> None:
        self.query_one("#cases", DataTable).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one("#cases", DataTable).action_cursor_up()

    def action_filter(self) -> None:
        box = self.query_one("#case-filter", Input)
        box.add_class("shown")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#case-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.case_filter = CaseFilter()
        self.refresh_table()
        self.query_one("#cases").focus()

    @on(Input.Changed, "#case-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.case_filter = CaseFilter.parse(event.value, self.case_filter.verdict)
        self.refresh_table()

    @on(Input.Submitted, "#case-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#cases").focus()

    def action_cycle_verdict(self) -> None:
        order: list[Verdict | None] = [None, *VERDICT_ORDER]
        current = order.index(self.case_filter.verdict)
        self.case_filter = CaseFilter(self.case_filter.text, order[(current + 1) % len(order)])
        self.refresh_table()

    def action_cycle_sort(self) -> None:
        index = SORT_COLUMNS.index(self.sort_column)
        self.sort_column = SORT_COLUMNS[(index + 1) % len(SORT_COLUMNS)]
        self.sort_reverse = False
        self.refresh_table()

    def action_compare(self) -> None:
        if self.run is not None:
            self.app.push_screen(CompareScreen(self.ctx, self.run))

    @work(exclusive=True, group="run-pick")
    async def action_runs(self) -> None:
        current = self.run.id if self.run is not None else None
        picked = await self.app.push_screen_wait(
            RunsScreen(self.ctx, "Open a run (newest first)", current)
        )
        if picked is not None and picked != current:
            self.open_run(picked)

    def open_run(self, run_id: str) -> None:
        """Show another run on this screen: its header, verdicts and cases."""
        self._run_id = run_id
        self.run = None
        self.marks.clear()
        self.query_one("#cases", DataTable).clear(columns=True)
        self._load()

    def reload(self) -> None:
        """Read the run again (after an action changed baselines or case files)."""
        if self.run is not None:
            self._run_id = self.run.id
        self.marks.clear()
        self._load()
