"""Home: the run's header, verdict bar, a banner when the run is too noisy to judge, and
its cases, failing first."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker

from redline.deciding.case_rows import (
    CaseFilter,
    CaseMarks,
    CaseQuery,
    CaseView,
    case_key,
    read_marks,
)
from redline.deciding.failure_groups import GroupRow, describer, failure_groups
from redline.deciding.groups import CaseTrend
from redline.deciding.history import DEFAULT_MARGINAL_RUNS
from redline.errors import RedlineError
from redline.running.quarantine import QuarantinedCase, quarantined, quarantined_cases
from redline.running.store import RunStore
from redline.vocabulary.causes import TriageState, is_conclusion
from redline.vocabulary.records import CaseOutcome, CaseRecord, CiOrigin, RunRecord, TriageRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict
from redline_tui.actions import start_case_action
from redline_tui.batch import CauseBatch
from redline_tui.context import TriageContext
from redline_tui.messages import CaseKey, CauseProgressed, OpenStep, RetryProgressed, Step
from redline_tui.retry import retry_transport
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.runs import RunsScreen
from redline_tui.screens.search import SearchScreen
from redline_tui.widgets.case_table import CaseTable, natural_widths
from redline_tui.widgets.dialogs import QuestionDialog
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import RowList
from redline_tui.widgets.run_summary import RunSummary

#: Typed first in the filter box, searches inside the outputs instead of filtering.
SEARCH_PREFIX = '"'
#: Samples indexed for search per transaction while the run is open.
INDEXED_AT_A_TIME = 2_000


class RunLoaded(Message):
    """The loading worker read the run's header and counts (None: the store holds no run
    yet); its cases are read by the table, a page at a time."""

    def __init__(
        self,
        run: RunRecord | None,
        outcomes: dict[CaseOutcome, int],
        verdicts: dict[Verdict, int],
        held: list[QuarantinedCase],
        origin: CiOrigin | None,
        triage: dict[str, TriageRecord],
        widths: dict[str, int],
    ) -> None:
        super().__init__()
        self.run = run
        self.widths = widths
        self.outcomes = outcomes
        self.verdicts = verdicts
        self.held = held
        self.origin = origin
        self.triage = triage


class MarksRead(Message):
    """Marks and sparklines of some of a run's cases, read after the first paint."""

    def __init__(self, run_id: str, marks: dict[str, CaseMarks]) -> None:
        super().__init__()
        self.run_id = run_id
        self.marks = marks


class GroupsFound(Message):
    """The run's failing cases, grouped by how they fail."""

    def __init__(self, run_id: str, groups: list[GroupRow]) -> None:
        super().__init__()
        self.run_id = run_id
        self.groups = groups


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
        Binding(
            "f",
            "groups",
            "Groups",
            tooltip="Failing cases grouped by how they fail; enter shows one group",
        ),
        Binding(
            "F",
            "search",
            "Search",
            tooltip="Search the run's raw outputs, failure reasons and case ids",
        ),
        Binding(
            "B",
            "batch",
            "Batch rerun",
            tooltip="Step 1 for every failing case shown (a group or the filter), queued",
        ),
        Binding("x", "stop_batch", "Stop batch", show=False, tooltip="Stop the queued Step 1s"),
        Binding(
            "T",
            "retry_transport",
            "Retry transport",
            show=False,
            tooltip="Draw again the run's samples lost to transport errors",
        ),
        Binding(
            "Q",
            "case_action('quarantine')",
            "Quarantine",
            show=False,
            tooltip="Quarantine the case until a date: it runs but cannot turn a run red",
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
        '  /"here is the json  search inside every raw output, reason and case id '
        "(enter lists the samples; F does the same)\n"
        "Enter keeps the filter and returns to the table; Esc clears it. "
        "The status line under the table always shows the filter in force.\n"
        "Marks: changed = the case file differs from the accepted baseline's (a new case, "
        "not a regression); marginal = it has sat within one sample of its bar for the last "
        f"{DEFAULT_MARGINAL_RUNS} scheduled runs or more; "
        "new = passed on the previous run of this model; still failing (N runs); flapping = "
        "changed between pass and fail at least twice in its last 6 runs; quarantined = held "
        "out of the run's result until a date.\n"
        "Groups (f): the failing cases by the first assertion their bad samples failed and "
        "their usual verdict, largest first; enter shows one group, Esc shows all again. "
        "B queues Step 1 for every failing case shown (a group, or the filter), a few at a "
        "time within the run's concurrency; each conclusion lands in the Triage column and "
        "the batch ends with a summary; x stops it. T draws again the samples lost to "
        "transport errors (refused when the inputs changed since the run). Q quarantines "
        "the highlighted case."
    )

    DEFAULT_CSS = """
    RunScreen #run-top { height: auto; padding: 0 1; }
    RunScreen #case-filter { margin-top: 1; display: none; }
    RunScreen #case-filter.shown { display: block; }
    RunScreen #groups { height: auto; max-height: 9; margin-top: 1; display: none; }
    RunScreen #quarantined {
        height: auto;
        max-height: 6;
        padding: 0 1;
        color: $text-muted;
        display: none;
    }
    RunScreen #batch-status {
        height: auto;
        padding: 0 1;
        background: $primary-muted;
        display: none;
    }
    """

    def __init__(self, ctx: TriageContext, run_id: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self._run_id = run_id
        self.run: RunRecord | None = None
        self.groups: list[GroupRow] = []
        self.cause_batch: CauseBatch | None = None
        #: Keys typed before the run's rows were on screen, replayed once they are.
        self._early_keys: list[tuple[str, str | None]] = []
        self._loaded = False
        #: How many of the open run's cases had each outcome.
        self.outcomes: dict[CaseOutcome, int] = {}
        self.table = CaseTable(ctx.jobs, id="cases")
        self.summary = RunSummary()
        self.filter_box = Input(
            placeholder='filter: text, v:wrong …, or "phrase to search', id="case-filter"
        )
        self.group_list = RowList(id="groups")
        self.quarantined = Static("", id="quarantined")
        self.batch_status = Static("", id="batch-status")
        self.status = Static("", id="run-status", classes="status-line")

    def compose(self) -> ComposeResult:
        with Vertical(id="run-top"):
            yield self.summary
            yield self.filter_box
            yield self.group_list
        yield self.table
        yield self.quarantined
        yield self.batch_status
        yield self.status
        yield KeyBar()

    @property
    def shown(self) -> list[CaseRecord]:
        return self.table.shown

    @property
    def marks(self) -> dict[str, CaseMarks]:
        return self.table.marks

    @property
    def case_filter(self) -> CaseFilter:
        return self.table.view.case_filter

    @property
    def sort_column(self) -> str:
        return self.table.view.sort_column

    def on_mount(self) -> None:
        self.table.focus()
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
        if run is None:
            self.post_message(RunLoaded(None, {}, {}, [], None, {}, {}))
            return
        (totals,) = store.case_values(run.id, ", ".join(f"sum(n_{v})" for v in VERDICT_ORDER))
        verdicts = {v: int(n or 0) for v, n in zip(VERDICT_ORDER, totals, strict=True)}
        keys = sorted(k.split("/", 1) for k in quarantined(run) if "/" in k)
        held = [r for s, c in keys if (r := store.case(run.id, s, c)) is not None]
        origin = store.ci_origins([run.id]).get(run.id)
        triage = store.triage(run.id)
        by_key = {f"{s}/{c}": t for (s, c), t in triage.items()}
        widths = natural_widths(store, run.id)
        outcomes = store.outcome_counts(run.id)
        held_cases = quarantined_cases(run, held)
        self.post_message(RunLoaded(run, outcomes, verdicts, held_cases, origin, by_key, widths))

    @on(RunLoaded)
    def _show_run(self, event: RunLoaded) -> None:
        run = event.run
        if run is None:
            self.summary.show_no_run()
            self.app.call_later(self._replay_early_keys)
            return
        self.run = run
        self.outcomes = event.outcomes
        self.summary.show_run(run, event.verdicts, event.origin)
        self._show_quarantined(event.held)
        self.table.show_cases(self.ctx.store, run.id, event.triage, event.widths)
        # Replayed from the app, as typed keys come: a key posted by this screen would not
        # bubble past it to the app, which runs the bindings.
        self.call_after_refresh(self.app.call_later, self._replay_early_keys)
        self.call_after_refresh(self._load_groups, run)
        self.call_after_refresh(self._index_for_search, run.id)

    def _show_quarantined(self, held: list[QuarantinedCase]) -> None:
        """Quarantined cases on their own: they ran, but cannot turn the run red."""
        box = self.quarantined
        box.display = bool(held)
        text = Text(f"Quarantined ({len(held)}), not counted in the result:", style="bold magenta")
        for item in held:
            text.append(f"\n  {item.case.suite}/{item.case.case_id}  ")
            text.append(item.label, style="bold green" if item.passing_again else "")
        box.update(text)

    @on(CaseTable.PageRead)
    def _page_read(self, event: CaseTable.PageRead) -> None:
        """Their marks are read once the rows are on screen (a store read per case)."""
        if self.run is not None and self._is_open(event.run_id):
            cases = [c for c in event.cases if case_key(c) not in self.marks]
            self.call_after_refresh(self._load_marks, self.run, cases)

    # Described in words: Textual would otherwise describe a worker by the repr of its
    # arguments, a run's manifest of 100,000 paths among them.
    @work(thread=True, group="run-marks", description="read the marks of some cases")
    def _load_marks(self, run: RunRecord, cases: Sequence[CaseRecord]) -> None:
        self._read_marks(run, cases)

    def _read_marks(self, run: RunRecord, cases: Sequence[CaseRecord]) -> dict[str, CaseTrend]:
        """History sparklines and marks of these cases, posted as they are read (from a
        worker's thread); their trends returned."""
        batch: dict[str, CaseMarks] = {}
        trends: dict[str, CaseTrend] = {}
        for key, marks in read_marks(self.ctx.store, self.ctx.baseline, run, cases):
            batch[key] = marks
            if marks.trend is not None:
                trends[key] = marks.trend
            if len(batch) >= 200:
                self.post_message(MarksRead(run.id, dict(batch)))
                batch.clear()
        self.post_message(MarksRead(run.id, batch))
        return trends

    @work(thread=True, exclusive=True, group="run-groups", description="group the failures")
    def _load_groups(self, run: RunRecord) -> None:
        """The failing cases' marks (whether the table has read them or not) and their
        failure groups."""
        failing = CaseQuery().failing().page(self.ctx.store, run.id, 0)
        trends = self._read_marks(run, failing)
        groups = failure_groups(
            self.ctx.store, run, failing, trends, describer(self.ctx.config, failing)
        )
        self.post_message(GroupsFound(run.id, groups))

    @work(thread=True, exclusive=True, group="run-index", description="index the run's outputs")
    def _index_for_search(self, run_id: str) -> None:
        """An imported run is not indexed for search yet: it is, a part at a time, through
        a connection of its own (the store's log lets the table read meanwhile; a search
        meanwhile scans what the index lacks)."""
        worker = get_current_worker()
        try:
            with RunStore.open(self.ctx.store.path) as own:
                while not self._index_stops(worker) and not own.index_for_search(
                    run_id, most=INDEXED_AT_A_TIME
                ):
                    pass
        except (RedlineError, sqlite3.Error):
            pass  # only a speed-up: a store that cannot take it (read-only, full) is scanned

    def _index_stops(self, worker: Worker[None]) -> bool:
        """The run's indexing stops with the screen (and the app), or when cancelled."""
        return worker.is_cancelled or not self.is_running

    def _is_open(self, run_id: str) -> bool:
        return self.run is not None and self.run.id == run_id

    @on(MarksRead)
    def _apply_marks(self, event: MarksRead) -> None:
        if self._is_open(event.run_id):
            self.table.apply_marks(event.marks)

    @on(GroupsFound)
    def _apply_groups(self, event: GroupsFound) -> None:
        if not self._is_open(event.run_id):
            return
        self.groups = event.groups
        self.group_list.clear_options()
        self.group_list.add_options(
            Option(Text(g.label()), id=str(i)) for i, g in enumerate(event.groups)
        )
        self._show_status()

    @on(CaseTable.Refilled)
    def _show_status(self) -> None:
        failing = self.outcomes.get(CaseOutcome.FAIL, 0)
        groups = f" in {len(self.groups)} group(s) (f)" if self.groups else ""
        hidden = self.table.hidden_columns
        narrow = f" · not shown at this width: {', '.join(hidden)}" if hidden else ""
        self.status.update(
            Text(
                f"{self.table.view_total} of {sum(self.outcomes.values())} cases · "
                f"{failing} failing{groups} · " + self.table.view.describe() + narrow
            )
        )

    def cause_update(self, event: CauseProgressed) -> None:
        """A background analysis of one of this run's cases moved on: redraw its cell."""
        if self.cause_batch is not None and self.cause_batch.advance(event):
            self._show_batch()
        if not self._is_open(event.key[0]):
            return
        run_id, suite, case_id = event.key
        if event.diagnosis is not None:
            state = TriageState.found(event.diagnosis.cause)
            if event.diagnosis.stopped and state == TriageState.UNDECIDED:
                state = TriageState.STOPPED
            progress = event.diagnosis.progress
            record = TriageRecord(run_id, suite, case_id, state, progress)
            self.table.set_triage(suite, case_id, record)
        elif event.error is not None:
            self.table.set_triage(suite, case_id, None)
        else:
            self.table.redraw_triage(f"{suite}/{case_id}")

    def show_triage_state(self, key: CaseKey, state: TriageState) -> None:
        """An action settled a case (retired, accepted): its cell says so."""
        if self._is_open(key[0]):
            self.table.set_triage(key[1], key[2], TriageRecord(*key, state))

    def selected_case(self) -> CaseRecord | None:
        return self.table.selected_case()

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

    def action_cursor_down(self) -> None:
        self.table.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.table.action_cursor_up()

    def action_filter(self) -> None:
        self.filter_box.add_class("shown")
        self.filter_box.focus()

    def action_clear_filter(self) -> None:
        if self.group_list.display:
            self.group_list.display = False
            self.table.focus()
            return
        self.filter_box.value = ""
        self.filter_box.remove_class("shown")
        self.table.view = CaseView(sort_column=self.sort_column, reverse=self.table.view.reverse)
        self.table.focus()

    @on(Input.Changed, "#case-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if event.value.startswith(SEARCH_PREFIX):
            return
        view = self.table.view
        case_filter = CaseFilter.parse(event.value, view.case_filter.verdict)
        self.table.view = replace(view, case_filter=case_filter)

    @on(Input.Submitted, "#case-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()
        if event.value.startswith(SEARCH_PREFIX):
            phrase = event.value[len(SEARCH_PREFIX) :].rstrip('"')
            event.input.value = ""
            event.input.remove_class("shown")
            self.action_search(phrase)

    def action_groups(self) -> None:
        """Show (or hide) the failure groups above the table."""
        options = self.group_list
        if options.display:
            options.display = False
            self.table.focus()
            return
        if not self.groups:
            self.notify("No failing case to group (or still reading the run)")
            return
        options.display = True
        options.focus()
        if options.highlighted is None:
            options.highlighted = 0

    @on(OptionList.OptionSelected, "#groups")
    def _group_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        event.option_list.display = False
        self.table.view = replace(self.table.view, group=self.groups[int(event.option_id or 0)])
        self.table.focus()
        self.table.move_cursor(row=0, animate=False)

    def action_search(self, text: str = "") -> None:
        if self.run is None:
            self.notify("No run open", severity="warning")
            return
        self.app.push_screen(SearchScreen(self.ctx, self.run, text))

    @work(exclusive=True, group="batch-start")
    async def action_batch(self) -> None:
        """Step 1 for every failing case shown, queued within the run's concurrency; cases
        that already have a conclusion are skipped unless the user asks for them too."""
        if self.run is None or self.ctx.jobs is None:
            return
        if self.ctx.config is None:
            self.notify("No redline config was found: cannot rerun cases.", severity="error")
            return
        if self.cause_batch is not None and not self.cause_batch.finished:
            self.notify("A batch is running already: x stops it", severity="warning")
            return
        failing = self.table.view_cases(self.table.case_query.failing())
        if not failing:
            self.notify("No failing case shown: nothing to rerun", severity="warning")
            return
        concluded = [c for c in failing if self._concluded(c)]
        if concluded:
            rest = len(failing) - len(concluded)
            again = await self.app.push_screen_wait(
                QuestionDialog(
                    "Some cases have a conclusion",
                    f"{len(concluded)} of the {len(failing)} failing cases shown already have "
                    f"a conclusion. Analyse them again too? No queues only the other {rest}.",
                    "Analyse them again",
                )
            )
            if not again:
                failing = [c for c in failing if not self._concluded(c)]
            if not failing:
                self.notify("Every failing case shown has a conclusion: nothing queued")
                return
        self.cause_batch = CauseBatch.start(self.ctx.jobs, self.ctx.config, self.run, failing)
        self.table.redraw_triages(failing)
        self._show_batch()

    def _concluded(self, case: CaseRecord) -> bool:
        record = self.table.triage.get(case_key(case))
        return record is not None and is_conclusion(record.state)

    def action_stop_batch(self) -> None:
        if self.cause_batch is None or self.cause_batch.finished:
            self.notify("No batch is running")
            return
        self.cause_batch.cancel()
        self._show_batch()

    def _show_batch(self) -> None:
        if self.cause_batch is None:
            return
        self.batch_status.display = True
        self.batch_status.update(Text(self.cause_batch.status()))
        if self.cause_batch.finished:
            self.notify(self.cause_batch.status(), timeout=8)

    @work(exclusive=True, group="case-action")
    async def action_retry_transport(self) -> None:
        """Draw again the slots lost to transport errors (and, if asked, the truncated)."""
        if self.run is None:
            return
        if await retry_transport(self, self.ctx, self.run):
            self.reload()

    @on(RetryProgressed)
    def _retry_progressed(self, event: RetryProgressed) -> None:
        self.batch_status.display = event.message is not None
        self.batch_status.update(event.message or "")

    def action_cycle_verdict(self) -> None:
        self.table.view = self.table.view.next_verdict()

    def action_cycle_sort(self) -> None:
        self.table.view = self.table.view.next_sort()

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
        self.groups = []
        self.group_list.display = False
        self.table.view = replace(self.table.view, group=None)
        self.table.forget_run()
        self._load()

    def reload(self) -> None:
        """Read the run again (after an action changed baselines or case files)."""
        if self.run is not None:
            self._run_id = self.run.id
        self.table.marks.clear()
        self._load()
