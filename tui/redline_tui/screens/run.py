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
from textual.widgets import DataTable, Input, OptionList, Static
from textual.widgets.option_list import Option

from redline.deciding.groups import CaseTrend, Trend
from redline.deciding.history import case_history, find_marginal, sparkline
from redline.deciding.quarantine import QuarantinedCase, quarantined_cases
from redline.presentation import OUTCOME_LABELS, OUTCOME_STYLES, result_headline_style
from redline.running.outcome import add_counts, too_noisy
from redline.running.records import CaseOutcome, CaseRecord, CiOrigin, RunRecord, TriageRecord
from redline.running.verdicts import VERDICT_ORDER, Verdict
from redline_tui.actions import start_case_action
from redline_tui.batch import CauseBatch
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
from redline_tui.failure_groups import GroupRow, describer, failure_groups, trend_of
from redline_tui.formatting import short_model_id
from redline_tui.messages import CaseKey, CauseProgressed, OpenStep, Step
from redline_tui.retry import retry_transport
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.runs import RunsScreen
from redline_tui.screens.search import SearchScreen
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
_MARKS_WIDTH = 24
#: Typed first in the filter box, searches inside the outputs instead of filtering.
SEARCH_PREFIX = '"'
_TREND_STYLES = {Trend.NEW: "bold red", Trend.STILL_FAILING: "red", Trend.FLAPPING: "yellow"}
_HISTORY_WIDTH = 10
#: Rows added before the first paint; more follow after each refresh.
_FIRST_ROWS = 100


@dataclass(frozen=True)
class CaseMarks:
    history: tuple[float | None, ...]
    changed: bool
    marginal: bool
    trend: CaseTrend | None = None
    quarantined: bool = False

    def text(self) -> Text:
        words: list[tuple[str, str]] = []
        if self.trend is not None:
            words.append((self.trend.label, _TREND_STYLES[self.trend.trend]))
        if self.quarantined:
            words.append(("quarantined", "magenta"))
        if self.changed:
            words.append(("changed", "bold magenta"))
        if self.marginal:
            words.append(("marginal", "bold yellow"))
        text = Text(overflow="ellipsis", no_wrap=True)
        for word, style in words:
            text.append(" " if text else "")
            text.append(word, style=style)
        return text


def header_text(run: RunRecord, origin: CiOrigin | None = None) -> Text:
    result = run.result.value.upper() if run.result else run.status.value
    style = result_headline_style(run.result)
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
    if origin is not None:
        # A pulled run: where CI ran it, the label a link where the terminal supports one.
        text.append("\npulled from ")
        text.append(origin.label, style=f"bold link {origin.url}")
        text.append(f" {origin.url}")
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
        "not a regression); marginal = it has sat within one sample of its bar for runs; "
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
        self.group: GroupRow | None = None
        self.groups: list[GroupRow] = []
        self.cause_batch: CauseBatch | None = None
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
            yield Input(
                placeholder='filter: text, v:wrong …, or "phrase to search', id="case-filter"
            )
            yield OptionList(id="groups")
        yield RowTable[Text](id="cases")
        yield Static("", id="quarantined")
        yield Static("", id="batch-status")
        yield Static("", id="run-status")
        yield KeyBar()

    def on_mount(self) -> None:
        for hidden in ("#noise-banner", "#groups", "#quarantined", "#batch-status"):
            self.query_one(hidden).display = False
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
        origin = store.ci_origins([run.id]).get(run.id) if run else None
        triage = store.triage(run.id) if run else {}
        self.app.call_from_thread(self._show_run, run, cases, origin, triage)

    def _show_run(
        self,
        run: RunRecord | None,
        cases: list[CaseRecord],
        origin: CiOrigin | None = None,
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
        self.query_one("#run-header", Static).update(header_text(run, origin))
        counts = add_counts(c.verdicts for c in cases)
        self.query_one(VerdictBar).set_counts(counts)
        noisy = too_noisy(counts)
        banner = self.query_one("#noise-banner", Static)
        if noisy:
            banner.update(Text(f"Inconclusive: {noisy}. Rerun once the infrastructure is sound."))
        banner.display = noisy is not None
        self._show_quarantined(quarantined_cases(run, cases))
        self.refresh_table()
        self.call_after_refresh(self._replay_early_keys)
        self.call_after_refresh(self._load_marks, run, cases)

    def _show_quarantined(self, held: list[QuarantinedCase]) -> None:
        """Quarantined cases on their own: they ran, but cannot turn the run red."""
        box = self.query_one("#quarantined", Static)
        box.display = bool(held)
        text = Text(f"Quarantined ({len(held)}), not counted in the result:", style="bold magenta")
        for item in held:
            text.append(f"\n  {item.case.suite}/{item.case.case_id}  ")
            text.append(item.label, style="bold green" if item.passing_again else "")
        box.update(text)

    @work(thread=True, exclusive=True, group="run-marks")
    def _load_marks(self, run: RunRecord, cases: Sequence[CaseRecord]) -> None:
        """History sparklines and marks: a store read per case, after the first paint."""
        batch: dict[str, CaseMarks] = {}
        held = {f"{q.case.suite}/{q.case.case_id}" for q in quarantined_cases(run, cases)}
        trends: dict[str, CaseTrend] = {}
        for case in cases:
            series = [
                p
                for p in case_history(self.ctx.store, case.case_id, case.suite).scheduled
                if p.started_at <= run.started_at
            ]
            baseline = self.ctx.baseline(case.suite)
            accepted = None if baseline is None else baseline.cases.get(case.case_id)
            trend = trend_of(series, run, case)
            if trend is not None:
                trends[case_key(case)] = trend
            batch[case_key(case)] = CaseMarks(
                history=tuple(p.rate for p in series),
                changed=accepted is not None and accepted.case_hash != case.case_hash,
                marginal=find_marginal(series) is not None,
                trend=trend,
                quarantined=case_key(case) in held,
            )
            if len(batch) >= 200:
                self.app.call_from_thread(self._apply_marks, dict(batch))
                batch.clear()
        self.app.call_from_thread(self._apply_marks, batch)
        groups = failure_groups(self.ctx.store, run, cases, trends, describer(self.ctx.config))
        self.app.call_from_thread(self._apply_groups, run, groups)

    def _apply_groups(self, run: RunRecord, groups: list[GroupRow]) -> None:
        if not self.is_attached or self.run is None or self.run.id != run.id:
            return
        self.groups = groups
        options = self.query_one("#groups", OptionList)
        options.clear_options()
        options.add_options(Option(Text(g.label()), id=str(i)) for i, g in enumerate(groups))
        self._show_status()

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
            "marks": _MARKS_WIDTH,
            "triage": TRIAGE_WIDTH,
        }
        for key, label in _COLUMNS:
            table.add_column(label, key=key, width=max(widths[key], len(label)))

    def refresh_table(self) -> None:
        table: DataTable[Text] = self.query_one("#cases", DataTable)
        if not table.columns:
            self._add_columns(table)
        selected = self.selected_case()
        cases = self.all_cases
        if self.group is not None:
            keys = self.group.keys
            cases = [c for c in cases if case_key(c) in keys]
        self.shown = sort_cases(self.case_filter.apply(cases), self.sort_column, self.sort_reverse)
        table.clear()
        self._generation += 1
        target = self.shown.index(selected) if selected in self.shown else None
        self._add_rows(self._generation, 0, target)
        self._show_status()

    def _show_status(self) -> None:
        failing = sum(1 for c in self.all_cases if c.result is CaseOutcome.FAIL)
        direction = " (reversed)" if self.sort_reverse else ""
        groups = f" in {len(self.groups)} group(s) (f)" if self.groups else ""
        group = f"group: {self.group.group.signature.label} · " if self.group else ""
        self.query_one("#run-status", Static).update(
            Text(
                f"{len(self.shown)} of {len(self.all_cases)} cases · {failing} failing{groups} · "
                f"{group}filter: {self.case_filter.describe()} · "
                f"sort: {self.sort_column}{direction}"
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
        if self.cause_batch is not None and self.cause_batch.advance(event) and self.is_attached:
            self._show_batch()
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
        groups = self.query_one("#groups", OptionList)
        if groups.display:
            groups.display = False
            self.query_one("#cases").focus()
            return
        box = self.query_one("#case-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.case_filter = CaseFilter()
        self.group = None
        self.refresh_table()
        self.query_one("#cases").focus()

    @on(Input.Changed, "#case-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if event.value.startswith(SEARCH_PREFIX):
            return
        self.case_filter = CaseFilter.parse(event.value, self.case_filter.verdict)
        self.refresh_table()

    @on(Input.Submitted, "#case-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if event.value.startswith(SEARCH_PREFIX):
            phrase = event.value[len(SEARCH_PREFIX) :].rstrip('"')
            event.input.value = ""
            event.input.remove_class("shown")
            self.query_one("#cases").focus()
            self.action_search(phrase)
            return
        self.query_one("#cases").focus()

    def action_groups(self) -> None:
        """Show (or hide) the failure groups above the table."""
        options = self.query_one("#groups", OptionList)
        if options.display:
            options.display = False
            self.query_one("#cases").focus()
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
        self.group = self.groups[int(event.option_id or 0)]
        event.option_list.display = False
        self.refresh_table()
        table = self.query_one("#cases", DataTable)
        table.focus()
        table.move_cursor(row=0, animate=False)

    def action_search(self, text: str = "") -> None:
        if self.run is None:
            self.notify("No run open", severity="warning")
            return
        self.app.push_screen(SearchScreen(self.ctx, self.run, self.all_cases, text))

    def action_batch(self) -> None:
        """Step 1 for every failing case shown, queued within the run's concurrency."""
        if self.run is None or self.ctx.jobs is None:
            return
        if self.ctx.config is None:
            self.notify("No redline config was found: cannot rerun cases.", severity="error")
            return
        if self.cause_batch is not None and not self.cause_batch.finished:
            self.notify("A batch is running already: x stops it", severity="warning")
            return
        failing = [c for c in self.shown if c.result is CaseOutcome.FAIL]
        if not failing:
            self.notify("No failing case shown: nothing to rerun", severity="warning")
            return
        self.cause_batch = CauseBatch.start(self.ctx.jobs, self.ctx.config, self.run, failing)
        for case in failing:
            self._redraw_triage(case_key(case))
        self._show_batch()

    def action_stop_batch(self) -> None:
        if self.cause_batch is None or self.cause_batch.finished:
            self.notify("No batch is running")
            return
        self.cause_batch.cancel()
        self._show_batch()

    def _show_batch(self) -> None:
        if self.cause_batch is None:
            return
        box = self.query_one("#batch-status", Static)
        box.display = True
        box.update(Text(self.cause_batch.status()))
        if self.cause_batch.finished:
            self.notify(self.cause_batch.status(), timeout=8)

    @work(exclusive=True, group="case-action")
    async def action_retry_transport(self) -> None:
        """Draw again the slots lost to transport errors (and, if asked, the truncated)."""
        if self.run is None:
            return
        if await retry_transport(self, self.ctx, self.run):
            self.reload()

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
        self.group = None
        self.groups = []
        self.query_one("#groups", OptionList).display = False
        self.query_one("#cases", DataTable).clear(columns=True)
        self._load()

    def reload(self) -> None:
        """Read the run again (after an action changed baselines or case files)."""
        if self.run is not None:
            self._run_id = self.run.id
        self.marks.clear()
        self._load()
