"""Two runs side by side: a model migration or a prompt change, case by case.

Pass rates, latency, tokens and cost per case: the columns come from the engine's
comparison report (`redline.report.comparison`), and a click on a column header (or `s`)
sorts by it. Above them, a pooled summary; below, the cases whose file changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Static

from redline.deciding.compare import (
    CaseDelta,
    Comparison,
    PooledSummary,
    Split,
    compare_runs,
    passed_before,
    pooled_summary,
    split_of,
)
from redline.errors import RedlineError
from redline.presentation import short_model_id
from redline.report.comparison import COLUMNS, SPLIT_NOTES, Column, columns, sort_rows, total_lines
from redline.vocabulary.records import CaseRecord, RunKind, RunRecord
from redline_tui.context import TriageContext
from redline_tui.messages import OpenStep, SampleSource, Step
from redline_tui.screens.runs import RunsScreen, run_result_text
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import ColumnSpec, RowTable, hidden_labels

#: How readily each comparison column gives way on a narrow terminal (0: always shown).
_PRIORITIES = {"case": 0, "a": 0, "b": 0, "delta": 0, "p": 1, "cost": 1, "latency": 2}
_CASE_MIN = 20
#: The order `f` walks the four-way split in: what the candidate broke first.
_SPLIT_ORDER = (
    Split.ONLY_B_FAILS,
    Split.ONLY_A_FAILS,
    Split.BOTH_FAIL,
    Split.UNDECIDED,
    Split.BOTH_PASS,
)


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def rate_cell(case: CaseRecord) -> str:
    """`4/5 80%` over content samples (truncated and transport ones say nothing of content)."""
    content = case.content_samples
    return f"{case.passes}/{content} {_rate(case.passes / content if content else None)}"


def run_line(label: str, run: RunRecord) -> Text:
    text = Text()
    text.append(f"{label} {run.id}", style="bold")
    text.append(f"  {run.started_at[:16].replace('T', ' ')}  ")
    text.append_text(run_result_text(run))
    commit = (run.git_commit or "no commit")[:7]
    text.append(f"  {run.git_branch or 'no branch'}@{commit}  {short_model_id(run.model_id)}")
    return text


def summary_text(comparison: Comparison, pooled: PooledSummary) -> Text:
    """The pooled summary: what moved, what is significant, what changed and was not compared."""
    text = Text()
    if comparison.withheld:
        for reason in comparison.withheld:
            text.append(
                f"Content comparison withheld (not enough evidence): {reason}\n",
                style="bold yellow",
            )
    else:
        text.append(
            f"Pooled pass rate A {_rate(pooled.rate_a)} ({pooled.passes_a}/{pooled.content_a})"
            f" → B {_rate(pooled.rate_b)} ({pooled.passes_b}/{pooled.content_b}), "
            f"one-sided p {pooled.p_value:.3g}\n"
        )
        text.append(f"{pooled.dropped} dropped", style="red" if pooled.dropped else "")
        text.append(
            f" ({pooled.significant_drops} significantly, p < 0.05)",
            style="bold red" if pooled.significant_drops else "",
        )
        text.append(f" · {pooled.rose} rose", style="green" if pooled.rose else "")
        text.append(f" ({pooled.significant_rises} significantly)")
        text.append(f" · {pooled.unchanged} unchanged")
    text.append(
        f" · {pooled.changed} case file(s) changed, not compared"
        if not comparison.withheld
        else f"{pooled.changed} case file(s) changed",
        style="magenta" if pooled.changed else "",
    )
    if comparison.only_a or comparison.only_b:
        text.append(f" · {len(comparison.only_a)} only in A · {len(comparison.only_b)} only in B")
    changes = comparison.manifest_changes
    text.append(f"\n{len(changes)} input(s) differ")
    if changes:
        text.append(": " + ", ".join(f"{c.path} {c.kind}" for c in changes[:3]))
        if len(changes) > 3:
            text.append(f", … {len(changes) - 3} more")
    return text


def usage_text(comparison: Comparison, shared: Sequence[CaseDelta] = ()) -> Text:
    """Cost, latency and tokens per call, A → B; the four-way split of the cases."""
    totals = {t.label: t for t in total_lines(comparison)}
    text = Text(
        " · ".join(
            f"{label} {totals[label].a} → {totals[label].b}"
            for label in ("cost per 1k calls", "mean latency ms", "p95 latency ms")
        )
    )
    tokens = [totals[k] for k in ("input tokens/call", "output tokens/call")]
    text.append(
        f"\ntokens/call in {tokens[0].a} → {tokens[0].b} · out {tokens[1].a} → {tokens[1].b}"
        f" · truncated {totals['truncated'].change} · refused {totals['refused'].change}"
    )
    cached = totals.get("cached input tokens (total)")
    if cached is not None:
        text.append(f"\ncached input tokens {cached.a} → {cached.b}")
    if not comparison.withheld:
        text.append("\n" + " · ".join(f"{s} {len(comparison.split(s))}" for s in Split))
        text.append("  (f lists each)", style="dim")
        shared_keys = {(d.suite, d.case_id) for d in shared}
        suspects = [
            d for d in comparison.likely_case_problems if (d.suite, d.case_id) not in shared_keys
        ]
        if shared:
            text.append(
                f"\nBoth fail, yet passed before with the same case file (not the migration, "
                f"not the case: a change both runs share, such as the prompt; Step 1 tells "
                f"which): {_names(shared)}",
                style="yellow",
            )
        if suspects:
            text.append(
                f"\nBoth fail ({SPLIT_NOTES[Split.BOTH_FAIL]}): {_names(suspects)}",
                style="yellow",
            )
    return text


def _names(deltas: Sequence[CaseDelta]) -> str:
    return ", ".join(d.case_id for d in deltas[:4]) + (" …" if len(deltas) > 4 else "")


def header_text(comparison: Comparison, shared: Sequence[CaseDelta] = ()) -> Text:
    text = run_line("A", comparison.a.run)
    text.append("\n")
    text.append_text(run_line("B", comparison.b.run))
    text.append("\n")
    text.append_text(summary_text(comparison, pooled_summary(comparison)))
    text.append("\n")
    text.append_text(usage_text(comparison, shared))
    return text


class ComparisonMade(Message):
    """The comparison worker compared the two runs."""

    def __init__(self, comparison: Comparison, shared: list[CaseDelta]) -> None:
        super().__init__()
        self.comparison = comparison
        #: Both-fail cases that passed before with the same case file.
        self.shared = shared


class ComparisonFailed(Message):
    """The two runs could not be compared: why, and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class ChangedCases(VerticalScroll):
    """The cases whose file changed between the runs: new cases, both rates for reading."""

    DEFAULT_CSS = """
    ChangedCases { height: auto; max-height: 10; }
    ChangedCases #changed-title { padding: 0 1; }
    ChangedCases #changed-table { height: auto; max-height: 8; }
    """

    def __init__(self) -> None:
        super().__init__(id="changed-section")
        self.pairs: list[tuple[CaseRecord, CaseRecord]] = []
        self._title = Static("", id="changed-title")
        self._table: RowTable[Text] = RowTable(id="changed-table")
        for key, label in (("case", "Case"), ("a", "Rate A"), ("b", "Rate B")):
            self._table.add_column(label, key=key)
        self.display = False

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._table

    def show(self, pairs: list[tuple[CaseRecord, CaseRecord]]) -> None:
        self.pairs = pairs
        self._table.clear()
        for i, (a, b) in enumerate(pairs):
            self._table.add_row(
                Text(f"{a.suite}/{a.case_id}"), Text(rate_cell(a)), Text(rate_cell(b)), key=str(i)
            )
        self._title.update(
            Text(
                f"Case file changed between the runs ({len(pairs)}): a new case, "
                "not a regression; both rates for reading",
                style="bold magenta",
            )
        )
        self.display = bool(pairs)


class CompareScreen(Screen[None]):
    """Per case: rate A vs B, delta, one-sided Fisher p, largest drop first; changed cases
    apart with both rates; either run picked from the runs list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("enter", "open_outputs", "Outputs of both"),
        Binding("a", "pick('a')", "Pick run A"),
        Binding("b", "pick('b')", "Pick run B"),
        Binding("x", "swap", "Swap A/B"),
        Binding("f", "next_split", "Split"),
        Binding("s", "sort_next", "Sort"),
        Binding("r", "sort_reverse", "Reverse", show=False),
    ]

    HELP: ClassVar[str] = (
        "Run A (before) against run B, per case over content samples (truncated and transport "
        "samples say nothing about content). Δ is B − A; p is a one-sided Fisher test in the "
        "direction the case moved, red when a drop is significant (p < 0.05). The summary "
        "pools every compared case. Cases whose file changed between the runs are listed "
        "apart with both rates: a changed case is a new case, never a regression.\n"
        "a / b pick either run from the recent runs; x swaps them; enter opens the outputs "
        "of both runs for the highlighted case; tab moves between the two tables."
    )

    DEFAULT_CSS = """
    CompareScreen #compare-header { height: auto; padding: 0 1; }
    CompareScreen #compare-table { height: 1fr; }
    """

    #: The column the rows are sorted by (None: largest drop first) and whether descending.
    order: reactive[tuple[str | None, bool]] = reactive((None, False), init=False)

    def __init__(self, ctx: TriageContext, run: RunRecord, other: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.run_b = run
        self.run_a_id = other
        self.comparison: Comparison | None = None
        self.rows: list[CaseDelta] = []
        self.header = Static("Loading comparison…", id="compare-header")
        self.table: RowTable[Text] = RowTable(id="compare-table")
        self.changed = ChangedCases()
        self.status = Static("", id="compare-status", classes="status-line")
        #: The four-way split shown as the list (None: every compared case).
        self.split: Split | None = None
        self.shown_columns: dict[str, int] = {}
        self.hidden_columns: list[str] = []

    @property
    def sort_key(self) -> str | None:
        return self.order[0]

    @property
    def descending(self) -> bool:
        return self.order[1]

    @property
    def changed_rows(self) -> list[tuple[CaseRecord, CaseRecord]]:
        return self.changed.pairs

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.table
        yield self.changed
        yield self.status
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="compare-load")
    def _load(self) -> None:
        store = self.ctx.store
        try:
            # A comparison run is compared with the run it repeats; otherwise the latest
            # earlier scheduled run (not another model's comparison run).
            other = self.run_a_id or self.run_b.against
            if other is None:
                earlier = [
                    r
                    for r in store.runs(kind=RunKind.RUN)
                    if r.started_at < self.run_b.started_at and r.against is None
                ]
                if not earlier:
                    self.post_message(
                        ComparisonFailed(
                            "No earlier run to compare with: press a to pick run A from the runs."
                        )
                    )
                    return
                other = earlier[0].id
            price = self.ctx.config.price if self.ctx.config is not None else None
            comparison = compare_runs(store, other, self.run_b.id, price)
            shared = [] if comparison.withheld else passed_before(store, comparison)
        except RedlineError as exc:
            self.post_message(ComparisonFailed(str(exc)))
            return
        self.post_message(ComparisonMade(comparison, shared))

    @on(ComparisonFailed)
    def _failed(self, event: ComparisonFailed) -> None:
        self._error(event.message)

    def _error(self, message: str) -> None:
        self.header.update(Text(message, style="bold red"))

    @on(ComparisonMade)
    def _show(self, event: ComparisonMade) -> None:
        comparison = event.comparison
        self.comparison = comparison
        self.run_a_id = comparison.a.run.id
        self.header.update(header_text(comparison, event.shared))
        self._fill()
        self.changed.show(list(comparison.changed))

    def _shown(self) -> list[Column]:
        return columns(self.comparison) if self.comparison is not None else []

    def _fill(self) -> None:
        """(Re)build the table: the comparison's rows in the chosen order."""
        comparison = self.comparison
        if comparison is None:
            return
        rows = list(comparison.rows)
        if self.split is not None:
            rows = [d for d in rows if split_of(d) is self.split]
        if self.sort_key is not None:
            rows = sort_rows(rows, self.sort_key, self.descending)
        self.rows = rows
        table = self.table
        specs = []
        for col in self._shown():
            arrow = ""
            if col.key == self.sort_key:
                arrow = " ▼" if self.descending else " ▲"
            widest = max((len(col.text(d)) for d in rows), default=1)
            least = min(_CASE_MIN, widest) if col.key == "case" else None
            priority = _PRIORITIES.get(col.key, 3)
            specs.append(ColumnSpec(col.key, col.header + arrow, widest, priority, least))
        self.shown_columns = table.set_columns(specs)
        self.hidden_columns = hidden_labels(specs, self.shown_columns)
        shown = [col for col in self._shown() if col.key in self.shown_columns]
        for i, d in enumerate(rows):
            style = ""
            if not comparison.withheld:
                style = "bold red" if d.significant_drop else ("green" if d.significant else "")
            table.add_row(
                *(
                    Text(
                        col.text(d),
                        style=style if col.content else "",
                        overflow="ellipsis",
                        no_wrap=True,
                    )
                    for col in shown
                ),
                key=str(i),
            )
        self._show_status()

    def _show_status(self) -> None:
        comparison = self.comparison
        if comparison is None:
            return
        shown = "withheld" if comparison.withheld else f"{len(self.rows)} compared"
        if self.split is not None:
            shown = f"{len(self.rows)} {self.split} (f: next split)"
        if self.sort_key is None:
            order = "largest drop first"
        else:
            header = next((c.header for c in COLUMNS if c.key == self.sort_key), self.sort_key)
            order = f"sorted by {header} {'▼ descending' if self.descending else '▲ ascending'}"
        hidden = (
            f" · not shown at this width: {', '.join(self.hidden_columns)}"
            if self.hidden_columns
            else ""
        )
        self.status.update(Text(f"{shown} · {order} (s: next column, r: reverse){hidden}"))

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by column `key`; the same column again turns the order around."""
        if descending is None:
            descending = not self.descending if key == self.sort_key else False
        self.order = (key, descending)

    def watch_order(self) -> None:
        self._fill()

    @on(DataTable.HeaderSelected, "#compare-table")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_key.value is not None:
            self.sort_by(event.column_key.value)

    def action_sort_next(self) -> None:
        keys = [c.key for c in self._shown()] or [c.key for c in COLUMNS]
        current = keys.index(self.sort_key) if self.sort_key in keys else -1
        self.sort_by(keys[(current + 1) % len(keys)], descending=False)

    def action_next_split(self) -> None:
        """Show one part of the four-way split as the list: only B fails first (what the
        candidate broke), then only A fails, both fail, undecided, both pass, every case."""
        if self.comparison is None or self.comparison.withheld:
            self.notify("The content comparison is withheld: there is no split to list")
            return
        order: list[Split | None] = [*_SPLIT_ORDER, None]
        self.split = order[(order.index(self.split) + 1) % len(order)]
        self._fill()
        self.table.move_cursor(row=0, animate=False)

    def action_sort_reverse(self) -> None:
        if self.sort_key is not None:
            self.sort_by(self.sort_key, descending=not self.descending)

    def action_back(self) -> None:
        self.dismiss(None)

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_outputs()

    def action_open_outputs(self) -> None:
        if self.comparison is None:
            return
        focused = self.focused
        if isinstance(focused, DataTable) and focused.id == "changed-table":
            row = focused.cursor_row
            if not 0 <= row < len(self.changed_rows):
                return
            case_b = self.changed_rows[row][1]
        else:
            row = self.table.cursor_row
            if not 0 <= row < len(self.rows):
                return
            case_b = self.rows[row].b
        a, b = self.comparison.a.run, self.comparison.b.run
        sources = (SampleSource(f"A {a.id[:6]}", a.id), SampleSource(f"B {b.id[:6]}", b.id))
        self.post_message(OpenStep(Step.OUTPUTS, b, case_b, sources))

    @work(exclusive=True, group="compare-choose")
    async def action_pick(self, side: str) -> None:
        current = self.run_a_id if side == "a" else self.run_b.id
        title = (
            "Pick run A: the run before (e.g. last night's run on the current model)"
            if side == "a"
            else "Pick run B: the run to judge (e.g. the candidate model's run)"
        )
        picked = await self.app.push_screen_wait(RunsScreen(self.ctx, title, current))
        if picked is None:
            return
        try:
            if side == "a":
                self.run_a_id = picked
            else:
                self.run_b = self.ctx.store.run(picked)
        except RedlineError as exc:
            self._error(str(exc))
            return
        self._load()

    def action_swap(self) -> None:
        if self.comparison is None:
            return
        old_a = self.comparison.a.run
        self.run_a_id = self.run_b.id
        self.run_b = old_a
        self._load()
