"""`redline label`: blind labelling of stored outputs against a rubric.

The screen shows one output and the rubric, never what a judge said about it:
the app is given outputs only (`LabelItem` carries no judge result), so a label
made here is the person's own reading. p/f record pass or fail; 1–5 first adds
an optional score; s skips; q quits. Every label is written as it is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Footer, Header, Static

from redline.judge.labels import LabelItem
from redline.textsafe import escape_output

#: Called with (item, passed, score) for each label; it writes the label file.
RecordLabel = Callable[[LabelItem, bool, int | None], None]

_CSS = """
#label-status { height: auto; padding: 0 1; background: $boost; }
#label-body { height: 1fr; }
#label-output-box { width: 3fr; border: round $primary; padding: 0 1; }
#label-rubric-box { width: 2fr; border: round $secondary; padding: 0 1; }
"""


class LabelApp(App[int]):
    """Label each item pass/fail (and optionally 1–5); returns how many were labelled."""

    CSS = _CSS
    TITLE = "redline label"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "label(True)", "Pass"),
        Binding("f", "label(False)", "Fail"),
        Binding("1", "score(1)", "Score 1", show=False),
        Binding("2", "score(2)", "Score 2", show=False),
        Binding("3", "score(3)", "Score 3", show=False),
        Binding("4", "score(4)", "Score 4", show=False),
        Binding("5", "score(5)", "Score 5", show=False),
        Binding("s", "skip", "Skip"),
        Binding("q", "quit_labelling", "Quit"),
    ]

    #: The item shown, and the optional 1–5 score given to it so far.
    position: reactive[int] = reactive(0, init=False)
    score: reactive[int | None] = reactive(None, init=False)

    def __init__(self, items: Sequence[LabelItem], rubric_card: str, record: RecordLabel) -> None:
        super().__init__()
        self.items = list(items)
        self.rubric_card = rubric_card
        self.record = record
        self.labelled = 0
        self.status = Static(id="label-status")
        self.output = Static(id="label-output")
        self.output_box = VerticalScroll(self.output, id="label-output-box")
        self.output_box.border_title = "output"

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.status
        with Horizontal(id="label-body"):
            yield self.output_box
            with VerticalScroll(id="label-rubric-box") as rubric:
                rubric.border_title = "rubric"
                yield Static(Text(self.rubric_card), id="label-rubric")
        yield Footer()

    def on_mount(self) -> None:
        self._show()

    def watch_position(self) -> None:
        self._show()

    def watch_score(self) -> None:
        self._show()

    @property
    def current(self) -> LabelItem | None:
        return self.items[self.position] if self.position < len(self.items) else None

    def _show(self) -> None:
        status, output = self.status, self.output
        item = self.current
        if item is None:
            status.update(Text(f"All done: {self.labelled} labelled. Press q to quit."))
            output.update(Text(""))
            return
        score = "none" if self.score is None else str(self.score)
        status.update(
            Text(
                f"{self.position + 1}/{len(self.items)}  {item.suite}/{item.case_id} "
                f"sample {item.index}  score: {score}   "
                "p pass · f fail · 1-5 score (optional) · s skip · q quit"
            )
        )
        output.update(Text(escape_output(item.output)))
        self.output_box.scroll_home(animate=False)

    def action_score(self, score: int) -> None:
        if self.current is not None:
            self.score = score

    def action_label(self, passed: bool) -> None:
        item = self.current
        if item is None:
            return
        self.record(item, passed, self.score)
        self.labelled += 1
        self._advance()

    def action_skip(self) -> None:
        if self.current is not None:
            self._advance()

    def action_quit_labelling(self) -> None:
        self.exit(self.labelled)

    def _advance(self) -> None:
        self.score = None
        self.position += 1


def open_labels(items: Sequence[LabelItem], rubric_card: str, record: RecordLabel) -> int:
    """The `label` app's entry point: how many labels were made."""
    return LabelApp(items, rubric_card, record).run() or 0
