"""Two runs side by side: a model migration or a prompt change, case by case.

Pass rates, latency, tokens and cost per case; the columns come from the engine's
comparison report, and a click on a column header (or `s`) sorts by it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from redline.compare import CaseDelta, Comparison, Split, compare_runs
from redline.errors import RedlineError
from redline.records import RunKind, RunRecord
from redline.report.comparison import COLUMNS, SPLIT_NOTES, Column, columns, sort_rows, total_lines
from redline_tui.context import TriageContext
from redline_tui.formatting import short_model_id
from redline_tui.messages import OpenStep, SampleSource, Step
from redline_tui.widgets.dialogs import Field, FormDialog
from redline_tui.widgets.key_bar import KeyBar


def header_text(comparison: Comparison) -> Text:
    a, b = comparison.a.run, comparison.b.run
    text = Text()
    text.append(f"A {a.id}", style="bold")
    text.append(f"  {short_model_id(a.model_id)}  {a.started_at[:16].replace('T', ' ')}\n")
    text.append(f"B {b.id}", style="bold")
    text.append(f"  {short_model_id(b.model_id)}  {b.started_at[:16].replace('T', ' ')}\n")
    changes = comparison.manifest_changes
    text.append(f"{len(changes)} manifest change(s)")
    if changes:
        text.append(": " + ", ".join(f"{c.path} {c.kind}" for c in changes[:4]))
        if len(changes) > 4:
            text.append(f", … {len(changes) - 4} more")
    if comparison.changed:
        text.append(
            f"\n{len(comparison.changed)} case(s) changed: not compared as regressions",
            style="magenta",
        )
    for reason in comparison.withheld:
        text.append(f"\nContent comparison withheld (rule 8): {reason}", style="bold yellow")
    totals = {t.label: t for t in total_lines(comparison)}
    text.append("\n")
    text.append_text(
        Text(
            " · ".join(
                f"{label} {totals[label].a} → {totals[label].b}"
                for label in ("cost per 1k calls", "mean latency ms", "p95 latency ms")
            )
        )
    )
    tokens = [totals[k] for k in ("input tokens/call", "output tokens/call")]
    text.append(
        f"\ntokens/call in {tokens[0].a} → {tokens[0].b} · out {tokens[1].a} → {tokens[1].b}"
        f" · truncated {totals['truncated'].change} · refused {totals['refused'].change}"
    )
    if not comparison.withheld:
        text.append("\n" + " · ".join(f"{s} {len(comparison.split(s))}" for s in Split))
        both = comparison.likely_case_problems
        if both:
            names = ", ".join(d.case_id for d in both[:4]) + (" …" if len(both) > 4 else "")
            text.append(f"\nBoth fail ({SPLIT_NOTES[Split.BOTH_FAIL]}): {names}", style="yellow")
    return text


class CompareScreen(Screen[None]):
    """Per case: rate A vs B, delta, one-sided Fisher p, latency, tokens and cost;
    largest drop first, sortable by any column."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("enter", "open_outputs", "Outputs of both"),
        Binding("e", "choose_runs", "Choose runs"),
        Binding("s", "sort_next", "Sort"),
        Binding("r", "sort_reverse", "Reverse", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, ctx: TriageContext, run: RunRecord, other: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.run_b = run
        self._other = other
        self.comparison: Comparison | None = None
        self.rows: list[CaseDelta] = []
        #: The column the rows are sorted by (None: largest drop first) and its direction.
        self.sort_key: str | None = None
        self.descending = False

    def compose(self) -> ComposeResult:
        yield Static("Loading comparison…", id="compare-header")
        table: DataTable[Text | str] = DataTable(
            id="compare-table", cursor_type="row", zebra_stripes=True
        )
        yield table
        yield Static("", id="compare-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self._load(self._other)

    @work(thread=True, exclusive=True, group="compare-load")
    def _load(self, other: str | None) -> None:
        store = self.ctx.store
        try:
            if other is None:
                earlier = [
                    r for r in store.runs(kind=RunKind.RUN) if r.started_at < self.run_b.started_at
                ]
                if not earlier:
                    self.app.call_from_thread(
                        self._error, "No earlier run to compare with: press e to choose two runs."
                    )
                    return
                other = earlier[0].id
            price = self.ctx.config.price if self.ctx.config is not None else None
            comparison = compare_runs(store, other, self.run_b.id, price)
        except RedlineError as exc:
            self.app.call_from_thread(self._error, str(exc))
            return
        self.app.call_from_thread(self._show, comparison)

    def _error(self, message: str) -> None:
        if not self.is_attached:
            return
        self.query_one("#compare-header", Static).update(Text(message, style="bold red"))

    def _show(self, comparison: Comparison) -> None:
        if not self.is_attached:
            return
        self.comparison = comparison
        self.query_one("#compare-header", Static).update(header_text(comparison))
        self._fill()
        drops = 0 if comparison.withheld else len(comparison.significant_drops)
        self.query_one("#compare-status", Static).update(
            Text(
                f"{len(self.rows)} cases compared · {drops} significant drop(s) (p < 0.05) · "
                f"{len(comparison.only_a)} only in A · {len(comparison.only_b)} only in B · "
                "s / click a header: sort"
            )
        )

    def _shown(self) -> list[Column]:
        return columns(self.comparison) if self.comparison is not None else []

    def _fill(self) -> None:
        """(Re)build the table: the comparison's rows in the chosen order."""
        comparison = self.comparison
        if comparison is None:
            return
        rows = list(comparison.rows)
        if self.sort_key is not None:
            rows = sort_rows(rows, self.sort_key, self.descending)
        self.rows = rows
        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        for col in self._shown():
            arrow = ""
            if col.key == self.sort_key:
                arrow = " ▼" if self.descending else " ▲"
            table.add_column(col.header + arrow, key=col.key)
        for i, d in enumerate(rows):
            style = ""
            if not comparison.withheld:
                style = "bold red" if d.significant_drop else ("green" if d.significant else "")
            table.add_row(
                *(Text(col.text(d), style=style if col.content else "") for col in self._shown()),
                key=str(i),
            )

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by column `key`; the same column again turns the order around."""
        if descending is None:
            descending = not self.descending if key == self.sort_key else False
        self.sort_key, self.descending = key, descending
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

    def action_sort_reverse(self) -> None:
        if self.sort_key is not None:
            self.sort_by(self.sort_key, descending=not self.descending)

    def action_back(self) -> None:
        self.dismiss(None)

    def action_cursor_down(self) -> None:
        self.query_one("#compare-table", DataTable).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one("#compare-table", DataTable).action_cursor_up()

    @on(DataTable.RowSelected, "#compare-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_outputs()

    def action_open_outputs(self) -> None:
        row = self.query_one("#compare-table", DataTable).cursor_row
        if self.comparison is None or not 0 <= row < len(self.rows):
            return
        delta = self.rows[row]
        a, b = self.comparison.a.run, self.comparison.b.run
        sources = (SampleSource(f"A {a.id[:6]}", a.id), SampleSource(f"B {b.id[:6]}", b.id))
        self.post_message(OpenStep(Step.OUTPUTS, b, delta.b, sources))

    @work(exclusive=True, group="compare-choose")
    async def action_choose_runs(self) -> None:
        current_a = self.comparison.a.run.id if self.comparison else ""
        values = await self.app.push_screen_wait(
            FormDialog(
                "Compare two runs",
                [Field("a", "Run A (before)", current_a), Field("b", "Run B", self.run_b.id)],
                note="Run ids or unique prefixes (see `redline runs`).",
            )
        )
        if values is None:
            return
        try:
            self.run_b = self.ctx.store.run(values["b"])
        except RedlineError as exc:
            self._error(str(exc))
            return
        self._load(values["a"])
