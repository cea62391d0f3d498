"""Two runs side by side: a model migration or a prompt change, case by case."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from redline.compare import CaseDelta, Comparison, compare_runs
from redline.errors import RedlineError
from redline.records import RunKind, RunRecord
from redline_tui.context import TriageContext
from redline_tui.formatting import short_model_id
from redline_tui.messages import OpenStep, SampleSource, Step
from redline_tui.widgets.dialogs import Field, FormDialog
from redline_tui.widgets.key_bar import KeyBar


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


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
        text.append(
            f"\nContent comparison withheld (not enough evidence): {reason}", style="bold yellow"
        )
    return text


class CompareScreen(Screen[None]):
    """Per case: rate A vs B, delta, one-sided Fisher p, largest drop first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("enter", "open_outputs", "Outputs of both"),
        Binding("e", "choose_runs", "Choose runs"),
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

    def compose(self) -> ComposeResult:
        yield Static("Loading comparison…", id="compare-header")
        table: DataTable[Text | str] = DataTable(
            id="compare-table", cursor_type="row", zebra_stripes=True
        )
        for key, label in (
            ("case", "Case"),
            ("a", "Rate A"),
            ("b", "Rate B"),
            ("delta", "Δ"),
            ("p", "p"),
            ("verdicts", "Verdict Δ"),
        ):
            table.add_column(label, key=key)
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
            comparison = compare_runs(store, other, self.run_b.id)
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
        self.rows = list(comparison.deltas)
        self.query_one("#compare-header", Static).update(header_text(comparison))
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        for i, d in enumerate(self.rows):
            style = "bold red" if d.significant_drop else ("green" if d.significant else "")
            delta = "—" if d.delta is None else f"{d.delta:+.0%}"
            shifts = " ".join(f"{v.value}{n:+d}" for v, n in d.verdict_delta.items() if n)
            table.add_row(
                Text(f"{d.suite}/{d.case_id}"),
                f"{d.a.passes}/{d.a.content_samples} {_rate(d.rate_a)}",
                f"{d.b.passes}/{d.b.content_samples} {_rate(d.rate_b)}",
                Text(delta, style=style),
                Text(f"{d.p_value:.3g}", style=style),
                shifts,
                key=str(i),
            )
        drops = len(comparison.significant_drops)
        self.query_one("#compare-status", Static).update(
            Text(
                f"{len(self.rows)} cases compared · {drops} significant drop(s) (p < 0.05) · "
                f"{len(comparison.only_a)} only in A · {len(comparison.only_b)} only in B"
            )
        )

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
