"""Step 2: read the raw outputs, not the score delta."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable, Static

from redline.deciding.baseline import GoldenReference
from redline.presentation import stopped_early_note
from redline.textsafe import preview
from redline.transcript import (
    conversation_entries,
    entries_text,
    is_conversation,
    is_plain,
    sample_answer,
    tool_names,
    transcript_text,
)
from redline.vocabulary.messages import Message as SentMessage
from redline.vocabulary.records import CaseRecord, RunRecord, SampleRecord
from redline_tui.context import TriageContext, rerun_label
from redline_tui.messages import SampleSource, Step
from redline_tui.screens.step import STEP_BINDINGS, CaseStepScreen, step_title
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.row_table import SCROLLBAR, ColumnSpec, fit_columns
from redline_tui.widgets.sample_panes import SamplePanes
from redline_tui.widgets.verdict_bar import verdict_badge


def failing_reasons(sample: SampleRecord) -> list[str]:
    """`assert[i] type: reason` for each failed assertion; the error for a transport failure."""
    reasons = [f"assert[{a.index}] {a.type}: {a.reason}" for a in sample.assertions if a.failed]
    if sample.error:
        reasons.insert(0, f"error: {sample.error}")
    return reasons


def _longest(texts: Iterable[str], least: int) -> int:
    return max((len(text) for text in texts), default=least)


def _finish(sample: SampleRecord) -> str:
    """Why the output ends: the finish reason, or `stopped` when redline ended it."""
    if sample.stopped_early is not None:
        return "stopped"
    return sample.finish_reason.value if sample.finish_reason else "—"


class SamplesRead(Message):
    """The loading worker read the case's samples and its golden output."""

    def __init__(
        self,
        rows: list[tuple[str, SampleRecord]],
        golden: GoldenReference,
        conversation: tuple[SentMessage, ...],
    ) -> None:
        super().__init__()
        self.rows = rows
        self.golden = golden
        self.conversation = conversation


class OutputsScreen(CaseStepScreen):
    """Every sample of the case, from the red run and its reruns, with raw text and diff."""

    STEP = Step.OUTPUTS
    #: This screen's own keys first: the footer is cut at the terminal's width.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "focus_raw", "Raw output"),
        Binding("d", "focus_diff", "Diff"),
        Binding("w", "toggle_wrap", "Wrap"),
        Binding("c", "toggle_conversation", "Conversation", show=False),
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
        "A sample that called tools shows each call with its arguments and, for a tool loop, "
        "every step with the fixture answers sent back; c shows the conversation the case "
        "sends (roles, tool calls, tool results) in the left pane instead, and back. "
        "o / d focus a pane; in a pane, g/G or Home/End go to the top/bottom. "
        "Click a step tab (1 Rerun, 2 Outputs, 3 History) at the top to switch steps."
    )

    DEFAULT_CSS = """
    OutputsScreen #samples { height: 8; min-height: 4; }
    OutputsScreen #sample-reasons { height: auto; max-height: 5; padding: 0 1; }
    """

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
        self.table: DataTable[Text | str] = DataTable(
            id="samples", cursor_type="row", zebra_stripes=True
        )
        self.reasons = Static("", id="sample-reasons")
        self.panes = SamplePanes(id="sample-panes")
        self.showing_conversation = False
        self.conversation: tuple[SentMessage, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(step_title(self.STEP, self.run, self.case), classes="step-title")
        yield self.table
        yield self.reasons
        yield self.panes
        yield KeyBar()

    def on_mount(self) -> None:
        self._set_columns([])
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
        sent = self.ctx.conversation(self.case.suite, self.case.case_id)
        self.post_message(SamplesRead(rows, golden, sent))

    @on(SamplesRead)
    def _show(self, event: SamplesRead) -> None:
        rows = event.rows
        self.samples = rows
        self._golden = event.golden
        self.conversation = event.conversation
        self._set_columns(rows)
        for i, (label, sample) in enumerate(rows):
            reasons = failing_reasons(sample)
            self.table.add_row(
                Text(label),
                str(sample.index),
                verdict_badge(sample.verdict),
                _finish(sample),
                Text(preview("; ".join(reasons), 60)),
                key=str(i),
            )
        if not rows:
            self.reasons.update(Text("No samples stored."))
            return
        start = next(
            (
                i
                for i, (label, sample) in enumerate(rows)
                if label == self.sources[0].label and sample.index == self.start_sample
            ),
            0,
        )
        self.table.move_cursor(row=start, animate=False)
        self.show_sample(start)

    def _set_columns(self, rows: Sequence[tuple[str, SampleRecord]]) -> None:
        """Widths from the rows (never cut a source or finish reason); the failing
        assertions take what is left of the terminal."""
        specs = [
            ColumnSpec("source", "Source", _longest((label for label, _ in rows), 7)),
            ColumnSpec("index", "#", _longest((str(s.index) for _, s in rows), 1)),
            ColumnSpec("verdict", "Verdict", _longest((f" {s.verdict} " for _, s in rows), 7)),
            ColumnSpec("finish", "Finish", _longest((_finish(s) for _, s in rows), 6)),
            ColumnSpec("failing", "Failing assertions", 60, 1, 18),
        ]
        available = max(0, (self.table.size.width or self.app.size.width) - SCROLLBAR)
        self.table.clear(columns=True)
        for key, cells in fit_columns(specs, available).items():
            label = next(s.label for s in specs if s.key == key)
            self.table.add_column(label, key=key, width=cells)

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
        stopped = stopped_early_note(sample)
        if stopped is not None:
            head.append("\n  " + preview(stopped, 600), style="cyan")
        tools = tool_names(sample)
        if tools:
            head.append("\n  tool calls: " + preview(", ".join(tools), 400))
        self.reasons.update(head)
        self.panes.show(
            transcript_text(sample),
            sample_answer(sample),
            self._golden,
            f"{label} sample {sample.index} [{sample.verdict}]",
        )
        plain = is_plain(sample) and not is_conversation(self.conversation)
        self.panes.raw.border_title = (
            "raw output (escaped)" if plain else "answer (escaped) · c: the conversation sent"
        )
        if self.showing_conversation:
            self._show_conversation()

    @on(DataTable.RowHighlighted, "#samples")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.samples):
            self.show_sample(event.cursor_row)

    @on(DataTable.RowSelected, "#samples")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_focus_raw()

    def action_cursor_down(self) -> None:
        self.table.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.table.action_cursor_up()

    def action_toggle_wrap(self) -> None:
        self.panes.toggle_wrap()

    def action_toggle_conversation(self) -> None:
        """The left pane: the conversation the case sends, or the selected sample again."""
        self.showing_conversation = not self.showing_conversation
        row = self.table.cursor_row
        if 0 <= row < len(self.samples):
            self.show_sample(row)
        elif self.showing_conversation:
            self._show_conversation()

    def _show_conversation(self) -> None:
        sent = self.conversation
        text = entries_text(conversation_entries(sent)) if sent else "The case file cannot be read."
        self.panes.show_raw(text, "conversation sent (escaped) · c: the answer")

    def action_focus_raw(self) -> None:
        self.panes.raw.focus()

    def action_focus_diff(self) -> None:
        self.panes.diff.focus()

    def selected_sample(self) -> SampleRecord | None:
        row = self.table.cursor_row
        return self.samples[row][1] if 0 <= row < len(self.samples) else None
