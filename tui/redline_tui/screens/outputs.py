"""Step 2: read the raw outputs, not the score delta."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from redline.deciding.baseline import GoldenReference
from redline.running.records import CaseRecord, RunRecord, SampleRecord
from redline.textsafe import preview
from redline_tui.context import TriageContext, rerun_label
from redline_tui.messages import SampleSource, Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.lazy_text import LazyText
from redline_tui.widgets.sample_text import diff_lines, safe_lines
from redline_tui.widgets.verdict_bar import verdict_badge


def failing_reasons(sample: SampleRecord) -> list[str]:
    """`assert[i] type: reason` for each failed assertion; the error for a transport failure."""
    reasons = [f"assert[{a.index}] {a.type}: {a.reason}" for a in sample.assertions if a.failed]
    if sample.error:
        reasons.insert(0, f"error: {sample.error}")
    return reasons


class OutputsScreen(CaseStepScreen):
    """Every sample of the case, from the red run and its reruns, with raw text and diff."""

    STEP = Step.OUTPUTS
    #: This screen's own keys first: the footer is cut at the terminal's width.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "focus_raw", "Raw output"),
        Binding("d", "focus_diff", "Diff"),
        Binding("w", "toggle_wrap", "Wrap"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        *STEP_BINDINGS,
    ]

    HELP: ClassVar[str] = (
        "Every sample of the case, from the red run and its reruns. Left: the raw output "
        "exactly as stored, control characters shown escaped. Right: its diff to the golden "
        "output (the accepted baseline's, else the case's own `golden:` answer; the first "
        "line says which); words that changed inside a changed line are highlighted.\n"
        "Both panes wrap (w turns wrapping off, ← → then scroll) and scroll together. "
        "o / d focus a pane; in a pane, g/G or Home/End go to the top/bottom. "
        "Click a step tab (1 Rerun, 2 Outputs, 3 History) at the top to switch steps."
    )

    def __init__(
        self,
        ctx: TriageContext,
        run: RunRecord,
        case: CaseRecord,
        sources: Sequence[SampleSource],
        sample: int | None = None,
    ) -> None:
        super().__init__(ctx, run, case)
        self.sources = tuple(sources)
        #: The sample of the first source to open on (a search result), else the first row.
        self.start_sample = sample
        self.samples: list[tuple[str, SampleRecord]] = []
        self._golden = GoldenReference(None, "Loading the golden output…")
        self._syncing = False

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        table: DataTable[Text | str] = DataTable(
            id="samples", cursor_type="row", zebra_stripes=True
        )
        for key, label in (
            ("source", "Source"),
            ("index", "#"),
            ("verdict", "Verdict"),
            ("finish", "Finish"),
            ("failing", "Failing assertions"),
        ):
            table.add_column(label, key=key)
        yield table
        yield Static("", id="sample-reasons")
        with Horizontal(id="sample-panes"):
            with Vertical(classes="pane"):
                yield LazyText(id="raw-output")
            with Vertical(classes="pane"):
                yield LazyText(id="golden-diff")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#raw-output").border_title = "raw output (escaped)"
        self.query_one("#golden-diff").border_title = "diff to golden output"
        self._show_wrap_state()
        self._load()

    @work(thread=True, exclusive=True, group="outputs-load")
    def _load(self) -> None:
        rows: list[tuple[str, SampleRecord]] = []
        for source in self.sources:
            rows.extend(
                (source.label, s)
                for s in self.ctx.store.samples(source.run_id, self.case.case_id, self.case.suite)
            )
        if len(self.sources) == 1:
            for rerun, _ in self.ctx.reruns_of(self.run.id, self.case):
                rows.extend(
                    (rerun_label(rerun), s)
                    for s in self.ctx.store.samples(rerun.id, self.case.case_id, self.case.suite)
                )
        golden = self.ctx.golden(self.case.suite, self.case.case_id)
        self.app.call_from_thread(self._show, rows, golden)

    def _show(self, rows: list[tuple[str, SampleRecord]], golden: GoldenReference) -> None:
        if not self.is_attached:
            return
        self.samples = rows
        self._golden = golden
        table = self.query_one("#samples", DataTable)
        table.clear()
        for i, (label, sample) in enumerate(rows):
            reasons = failing_reasons(sample)
            table.add_row(
                Text(label),
                str(sample.index),
                verdict_badge(sample.verdict),
                sample.finish_reason.value if sample.finish_reason else "—",
                Text(preview("; ".join(reasons), 60)),
                key=str(i),
            )
        if rows:
            start = next(
                (
                    i
                    for i, (label, sample) in enumerate(rows)
                    if label == self.sources[0].label and sample.index == self.start_sample
                ),
                0,
            )
            table.move_cursor(row=start, animate=False)
            self.show_sample(start)
        else:
            self.query_one("#sample-reasons", Static).update(Text("No samples stored."))

    def show_sample(self, row: int) -> None:
        label, sample = self.samples[row]
        reasons = failing_reasons(sample) or ["every assertion passed"]
        head = Text(f"{label} sample {sample.index}: ", style="bold")
        head.append_text(verdict_badge(sample.verdict))
        meta = [
            f"latency {sample.latency_ms:.0f} ms" if sample.latency_ms is not None else "",
            f"{sample.output_tokens} tokens" if sample.output_tokens is not None else "",
            f"model {sample.model}" if sample.model else "",
        ]
        head.append("  " + "  ".join(m for m in meta if m))
        for reason in reasons:
            head.append("\n  " + preview(reason, 400))
        self.query_one("#sample-reasons", Static).update(head)
        self.query_one("#raw-output", LazyText).set_lines(safe_lines(sample.output))
        lines, kinds, spans = diff_lines(
            self._golden, sample.output, f"{label} sample {sample.index} [{sample.verdict}]"
        )
        self.query_one("#golden-diff", LazyText).set_lines(lines, kinds, spans)

    @on(DataTable.RowHighlighted, "#samples")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.samples):
            self.show_sample(event.cursor_row)

    @on(DataTable.RowSelected, "#samples")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_focus_raw()

    def action_cursor_down(self) -> None:
        self.query_one("#samples", DataTable).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one("#samples", DataTable).action_cursor_up()

    @on(LazyText.Scrolled)
    def _pane_scrolled(self, event: LazyText.Scrolled) -> None:
        """The raw output and the diff scroll together, at the same fraction of their length."""
        if self._syncing:
            return
        other_id = "golden-diff" if event.view.id == "raw-output" else "raw-output"
        other = self.query_one(f"#{other_id}", LazyText)
        self._syncing = True
        try:
            other.scroll_to_fraction(event.view.scroll_fraction())
        finally:
            self._syncing = False

    def action_toggle_wrap(self) -> None:
        for view in self.query(LazyText):
            view.wrap = not view.wrap
        self._show_wrap_state()

    def _show_wrap_state(self) -> None:
        wrapped = self.query_one("#raw-output", LazyText).wrap
        state = "wrapped" if wrapped else "not wrapped: ← → scroll"
        self.query_one("#raw-output").border_subtitle = f"{state} · w toggles"
        self.query_one("#golden-diff").border_subtitle = "scrolls with the raw output"

    def action_focus_raw(self) -> None:
        self.query_one("#raw-output").focus()

    def action_focus_diff(self) -> None:
        self.query_one("#golden-diff").focus()

    def selected_sample(self) -> SampleRecord | None:
        row = self.query_one("#samples", DataTable).cursor_row
        return self.samples[row][1] if 0 <= row < len(self.samples) else None
