"""One sample's raw output beside its diff to the golden output, scrolling together."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from redline.deciding.baseline import GoldenReference
from redline_tui.widgets.lazy_text import LazyText
from redline_tui.widgets.sample_text import diff_lines, safe_lines


class SamplePanes(Horizontal):
    """Left: the raw output exactly as stored, escaped; right: its diff to the golden."""

    DEFAULT_CSS = """
    SamplePanes { height: 1fr; }
    SamplePanes > .pane { width: 1fr; }
    SamplePanes LazyText { border: round $primary-muted; }
    SamplePanes LazyText:focus { border: round $accent; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.raw = LazyText(id="raw-output")
        self.diff = LazyText(id="golden-diff")
        self.raw.border_title = "raw output (escaped)"
        self.diff.border_title = "diff to golden output"
        self.diff.border_subtitle = "scrolls with the raw output"
        self._syncing = False
        self._show_wrap_state()

    def compose(self) -> ComposeResult:
        with Vertical(classes="pane"):
            yield self.raw
        with Vertical(classes="pane"):
            yield self.diff

    def show(self, raw: str, answer: str, golden: GoldenReference, label: str) -> None:
        """A sample's raw text on the left (its output, or a transcript), and the diff of its
        answer to the golden headed by `label` (which sample it is)."""
        self.raw.set_lines(safe_lines(raw))
        self.diff.set_lines(*diff_lines(golden, answer, label))

    def show_raw(self, raw: str, title: str) -> None:
        """Other text in the left pane (the conversation sent), titled by what it is."""
        self.raw.border_title = title
        self.raw.set_lines(safe_lines(raw))

    def toggle_wrap(self) -> None:
        for view in (self.raw, self.diff):
            view.wrap = not view.wrap
        self._show_wrap_state()

    def _show_wrap_state(self) -> None:
        state = "wrapped" if self.raw.wrap else "not wrapped: ← → scroll"
        self.raw.border_subtitle = f"{state} · w toggles"

    @on(LazyText.Scrolled)
    def _pane_scrolled(self, event: LazyText.Scrolled) -> None:
        """The raw output and the diff scroll together, at the same fraction of their length."""
        event.stop()
        if self._syncing:
            return
        other = self.diff if event.view is self.raw else self.raw
        self._syncing = True
        try:
            other.scroll_to_fraction(event.view.scroll_fraction())
        finally:
            self._syncing = False
