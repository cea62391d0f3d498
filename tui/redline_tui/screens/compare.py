"""Two runs side by side: a model migration or a prompt change, case by case.

The screen is built from `COMPARE_COLUMNS`: each column reads one `CaseDelta` of the
engine's comparison, so a new measure (cost, latency, tokens) is one more entry there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from redline.compare import CaseDelta, Comparison, PooledSummary, compare_runs, pooled_summary
from redline.errors import RedlineError
from redline.records import CaseRecord, RunKind, RunRecord
from redline_tui.context import TriageContext
from redline_tui.formatting import short_model_id
from redline_tui.messages import OpenStep, SampleSource, Step
from redline_tui.screens.runs import RunsScreen, run_result_text
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import RowTable


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def rate_cell(case: CaseRecord) -> str:
    """`4/5 80%` over content samples (truncated and transport ones say nothing of content)."""
    content = case.content_samples
    return f"{case.passes}/{content} {_rate(case.passes / content if content else None)}"


def _delta_style(d: CaseDelta) -> str:
    return "bold red" if d.significant_drop else ("green" if d.significant else "")


@dataclass(frozen=True)
class CompareColumn:
    """One column of the per-case table: its key, header and cell for a case's change."""

    key: str
    label: str
    cell: Callable[[CaseDelta], Text]


COMPARE_COLUMNS: list[CompareColumn] = [
    CompareColumn("case", "Case", lambda d: Text(f"{d.suite}/{d.case_id}")),
    CompareColumn("a", "Rate A", lambda d: Text(rate_cell(d.a))),
    CompareColumn("b", "Rate B", lambda d: Text(rate_cell(d.b))),
    CompareColumn(
        "delta",
        "Δ",
        lambda d: Text("—" if d.delta is None else f"{d.delta:+.0%}", style=_delta_style(d)),
    ),
    CompareColumn(
        "p",
        "p",
        lambda d: Text(f"{d.p_value:.3g}" if d.independent else d.p_text, style=_delta_style(d)),
    ),
    CompareColumn(
        "verdicts",
        "Verdict Δ",
        lambda d: Text(" ".join(f"{v.value}{n:+d}" for v, n in d.verdict_delta.items() if n)),
    ),
]


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


def header_text(comparison: Comparison) -> Text:
    text = run_line("A", comparison.a.run)
    text.append("\n")
    text.append_text(run_line("B", comparison.b.run))
    text.append("\n")
    text.append_text(summary_text(comparison, pooled_summary(comparison)))
    return text


class CompareScreen(Screen[None]):
    """Per case: rate A vs B, delta, one-sided Fisher p, largest drop first; changed cases
    apart with both rates; either run picked from the runs list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("enter", "open_outputs", "Outputs of both"),
        Binding("a", "pick('a')", "Pick run A"),
        Binding("b", "pick('b')", "Pick run B"),
        Binding("x", "swap", "Swap A/B"),
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

    def __init__(self, ctx: TriageContext, run: RunRecord, other: str | None = None) -> None:
        super().__init__()
        self.ctx = ctx
        self.run_b = run
        self.run_a_id = other
        self.comparison: Comparison | None = None
        self.rows: list[CaseDelta] = []
        self.changed_rows: list[tuple[CaseRecord, CaseRecord]] = []

    def compose(self) -> ComposeResult:
        yield Static("Loading comparison…", id="compare-header")
        table: RowTable[Text] = RowTable(id="compare-table")
        for column in COMPARE_COLUMNS:
            table.add_column(column.label, key=column.key)
        yield table
        with VerticalScroll(id="changed-section"):
            yield Static("", id="changed-title")
            changed: RowTable[Text] = RowTable(id="changed-table")
            for key, label in (("case", "Case"), ("a", "Rate A"), ("b", "Rate B")):
                changed.add_column(label, key=key)
            yield changed
        yield Static("", id="compare-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#changed-section").display = False
        self.query_one("#compare-table").focus()
        self._load()

    @work(thread=True, exclusive=True, group="compare-load")
    def _load(self) -> None:
        store = self.ctx.store
        try:
            other = self.run_a_id
            if other is None:
                earlier = [
                    r for r in store.runs(kind=RunKind.RUN) if r.started_at < self.run_b.started_at
                ]
                if not earlier:
                    self.app.call_from_thread(
                        self._error,
                        "No earlier run to compare with: press a to pick run A from the runs.",
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
        self.run_a_id = comparison.a.run.id
        self.rows = list(comparison.deltas)
        self.query_one("#compare-header", Static).update(header_text(comparison))
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        for i, d in enumerate(self.rows):
            table.add_row(*(column.cell(d) for column in COMPARE_COLUMNS), key=str(i))
        self.changed_rows = list(comparison.changed)
        changed = self.query_one("#changed-table", DataTable)
        changed.clear()
        for i, (a, b) in enumerate(self.changed_rows):
            changed.add_row(
                Text(f"{a.suite}/{a.case_id}"), Text(rate_cell(a)), Text(rate_cell(b)), key=str(i)
            )
        self.query_one("#changed-title", Static).update(
            Text(
                f"Case file changed between the runs ({len(self.changed_rows)}): a new case, "
                "not a regression; both rates for reading",
                style="bold magenta",
            )
        )
        self.query_one("#changed-section").display = bool(self.changed_rows)
        shown = "withheld" if comparison.withheld else f"{len(self.rows)} compared"
        self.query_one("#compare-status", Static).update(
            Text(f"{shown} · enter: outputs of both · a/b: pick a run · x: swap")
        )

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
            row = self.query_one("#compare-table", DataTable).cursor_row
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
