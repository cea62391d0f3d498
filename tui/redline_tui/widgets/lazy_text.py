"""A scrolling text view that renders only the visible lines.

Raw model output can be a megabyte on one line; building a full renderable for it
would freeze the app, so each line is cut to the visible window when painted.
Text is shown as given: never parsed as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

#: Line kinds a caller may tag lines with; each maps to a component class of the widget.
LINE_KINDS = ("plain", "added", "removed", "hunk", "note")


class LazyText(ScrollView, can_focus=True):
    """Lines of literal text, each optionally tagged with a kind that picks its colour."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lazy-text--added",
        "lazy-text--removed",
        "lazy-text--hunk",
        "lazy-text--note",
    }

    DEFAULT_CSS = """
    LazyText { height: 1fr; }
    LazyText > .lazy-text--added { color: $text-success; background: $success-muted; }
    LazyText > .lazy-text--removed { color: $text-error; background: $error-muted; }
    LazyText > .lazy-text--hunk { color: $text-accent; }
    LazyText > .lazy-text--note { color: $text-muted; text-style: italic; }
    """

    def __init__(
        self,
        lines: Sequence[str] = (),
        kinds: Sequence[str] | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: list[str] = []
        self._kinds: list[str] = []
        self.set_lines(lines, kinds)

    @property
    def lines(self) -> list[str]:
        return self._lines

    @property
    def kinds(self) -> list[str]:
        return self._kinds

    def set_lines(self, lines: Sequence[str], kinds: Sequence[str] | None = None) -> None:
        self._lines = list(lines)
        self._kinds = list(kinds) if kinds is not None else ["plain"] * len(self._lines)
        width = max((_width(line) for line in self._lines), default=0)
        self.virtual_size = Size(width, len(self._lines))
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        kind = self._kinds[index]
        style = base
        if kind != "plain":
            style = base + self.get_component_rich_style(f"lazy-text--{kind}")
        line = self._lines[index]
        if line.isascii():
            visible = line[scroll_x : scroll_x + width]
            strip = Strip([Segment(visible, style)], len(visible))
            return strip.extend_cell_length(width, style)
        strip = Strip([Segment(line, style)], cell_len(line))
        return strip.crop_extend(scroll_x, scroll_x + width, style)


def _width(line: str) -> int:
    return len(line) if line.isascii() else cell_len(line)
