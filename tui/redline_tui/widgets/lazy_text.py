"""A scrolling text view that renders only the visible lines, wrapped or not.

Raw model output can be a megabyte on one line; building a full renderable for it
would freeze the app. Lines are kept as plain strings: with wrapping off each is cut
to the visible window when painted; with wrapping on, the rows are a list of
(line, start, end) slices computed once per width, so a paint still touches only
the rows on screen. Text is shown as given: never parsed as markup.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

#: Line kinds a caller may tag lines with; each maps to a component class of the widget.
LINE_KINDS = ("plain", "added", "removed", "hunk", "note")

#: Character spans of one line to emphasise (the words that changed in a diff line).
Spans = tuple[tuple[int, int], ...]

#: A wrapped line breaks at the last space when it falls in the final third of the width.
_BREAK_WINDOW = 3


def wrap_points(line: str, width: int) -> list[tuple[int, int]]:
    """(start, end) slices of `line`, each at most `width` cells, broken after a space
    where one is near the edge, else mid-word. An empty line is one empty row."""
    starts = wrap_starts(line, width)
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]


def wrap_starts(line: str, width: int) -> list[int]:
    """Where each row of `line` starts when wrapped to `width` cells (see `wrap_points`)."""
    size = len(line)
    ascii_only = line.isascii()
    if width < 1 or (size <= width and ascii_only):
        return [0]
    starts = [0]
    window = width - width // _BREAK_WINDOW
    pos = 0
    while True:
        end = pos + width
        if end >= size and (ascii_only or cell_len(line[pos:]) <= width):
            return starts
        if not ascii_only:
            end = _fit_cells(line, pos, min(end, size), width)
            if end >= size:
                return starts
        space = line.rfind(" ", pos, end)
        if space >= 0 and space + 1 - pos > window:
            end = space + 1
        starts.append(end)
        pos = end


def _fit_cells(line: str, start: int, end: int, width: int) -> int:
    """The largest end ≤ `end` whose slice from `start` fits `width` cells (at least one char)."""
    cells = cell_len(line[start:end])
    while cells > width and end - start > 1:
        end -= max(1, (cells - width) // 2)
        cells = cell_len(line[start:end])
    return end


class LazyText(ScrollView, can_focus=True):
    """Lines of literal text, each optionally tagged with a kind that picks its colour,
    with optional word spans drawn stronger; wraps to the width unless `wrap` is off."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g,home", "scroll_home", "Top", show=False),
        Binding("G,end", "scroll_end", "Bottom", show=False),
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lazy-text--added",
        "lazy-text--removed",
        "lazy-text--hunk",
        "lazy-text--note",
        "lazy-text--added-word",
        "lazy-text--removed-word",
        "lazy-text--plain-word",
        "lazy-text--continued",
    }

    DEFAULT_CSS = """
    LazyText { height: 1fr; scrollbar-gutter: stable; }
    LazyText > .lazy-text--added { color: $text-success; background: $success-muted; }
    LazyText > .lazy-text--removed { color: $text-error; background: $error-muted; }
    LazyText > .lazy-text--hunk { color: $text-accent; }
    LazyText > .lazy-text--note { color: $text-muted; text-style: italic; }
    LazyText > .lazy-text--added-word { background: $success; color: $text; text-style: bold; }
    LazyText > .lazy-text--removed-word { background: $error; color: $text; text-style: bold; }
    LazyText > .lazy-text--plain-word { text-style: bold underline; }
    LazyText > .lazy-text--continued { color: $text-muted; }
    """

    #: Wrap long lines to the width (on by default: outputs are read, not scrolled sideways).
    wrap: reactive[bool] = reactive(True)

    class Scrolled(Message):
        """The view scrolled vertically: a paired pane may follow."""

        def __init__(self, view: LazyText) -> None:
            super().__init__()
            self.view = view

        @property
        def control(self) -> LazyText:
            return self.view

    def __init__(
        self,
        lines: Sequence[str] = (),
        kinds: Sequence[str] | None = None,
        *,
        wrap: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: list[str] = []
        self._kinds: list[str] = []
        self._spans: Sequence[Spans] = ()
        #: Wrapped layout: the first row of each line (plus the total), and each line's
        #: row starts when it takes more than one row.
        self._first_row: list[int] = [0]
        self._starts: dict[int, list[int]] = {}
        self._rows_width = -1
        self.set_reactive(LazyText.wrap, wrap)
        self.set_lines(lines, kinds)

    @property
    def lines(self) -> list[str]:
        return self._lines

    @property
    def kinds(self) -> list[str]:
        return self._kinds

    @property
    def spans(self) -> Sequence[Spans]:
        return self._spans

    @property
    def row_count(self) -> int:
        """Rows as laid out now: lines, or wrapped slices of them."""
        return int(self.virtual_size.height)

    def set_lines(
        self,
        lines: Sequence[str],
        kinds: Sequence[str] | None = None,
        spans: Sequence[Spans] | None = None,
    ) -> None:
        self._lines = list(lines)
        count = len(self._lines)
        self._kinds = list(kinds) if kinds is not None else ["plain"] * count
        self._spans = spans if spans is not None else [()] * count
        self._layout(force=True)
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def watch_wrap(self, was_wrapped: bool) -> None:
        """The line at the top stays at the top: `w` deep in a megabyte keeps the place."""
        top = self._line_at(round(self.scroll_y), was_wrapped)
        self._layout(force=True)
        row = top if not self.wrap else self._first_row[min(top, len(self._first_row) - 1)]
        self.scroll_to(0, row, animate=False)
        self.refresh()

    def _line_at(self, row: int, wrapped: bool) -> int:
        """The index of the line shown at `row` of the layout (`wrapped` or not)."""
        if not wrapped:
            return row
        found = self._row(row)
        return found[0] if found is not None else max(0, len(self._lines) - 1)

    def on_resize(self) -> None:
        self._layout()

    def _text_width(self) -> int:
        """The width rows wrap to; 0 until the widget has been laid out."""
        return max(0, self.scrollable_content_region.width)

    def _layout(self, force: bool = False) -> None:
        """Rows for the current width; recomputed only when the width or the text changed."""
        if not self.wrap:
            self._first_row, self._starts = [0], {}
            self._rows_width = -1
            width = max((_width(line) for line in self._lines), default=0)
            self.virtual_size = Size(width, len(self._lines))
            return
        width = self._text_width()
        if width < 1:
            # Not laid out yet: wrapping to a guessed width would be wasted (and at width 1,
            # a megabyte is a million rows). The first resize lays the rows out.
            self._first_row, self._starts, self._rows_width = [0], {}, -1
            self.virtual_size = Size(0, 0)
            return
        if not force and width == self._rows_width:
            return
        self._rows_width = width
        first_row = [0]
        starts: dict[int, list[int]] = {}
        total = 0
        for index, line in enumerate(self._lines):
            if len(line) > width or not line.isascii():
                line_starts = wrap_starts(line, width)
                if len(line_starts) > 1:
                    starts[index] = line_starts
                total += len(line_starts)
            else:
                total += 1
            first_row.append(total)
        self._first_row, self._starts = first_row, starts
        self.virtual_size = Size(width, total)

    def _row(self, row: int) -> tuple[int, int, int] | None:
        """(line index, start, end) of a wrapped row; None past the end."""
        if row >= self._first_row[-1]:
            return None
        index = bisect.bisect_right(self._first_row, row) - 1
        line_starts = self._starts.get(index)
        if line_starts is None:
            return index, 0, len(self._lines[index])
        k = row - self._first_row[index]
        end = line_starts[k + 1] if k + 1 < len(line_starts) else len(self._lines[index])
        return index, line_starts[k], end

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Scrolled(self))

    def action_scroll_home(self) -> None:
        self.scroll_to(y=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(y=self.max_scroll_y, animate=False)

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_y + self.scrollable_content_region.height, animate=False)

    def action_page_up(self) -> None:
        self.scroll_to(y=self.scroll_y - self.scrollable_content_region.height, animate=False)

    def scroll_fraction(self) -> float:
        """How far down the view is, 0 at the top and 1 at the bottom."""
        top = self.max_scroll_y
        return 0.0 if top <= 0 else self.scroll_y / top

    def scroll_to_fraction(self, fraction: float) -> None:
        self.scroll_to(y=round(fraction * self.max_scroll_y), animate=False)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if self.wrap:
            found = self._row(row)
            if found is None:
                return Strip.blank(width, base)
            index, start, end = found
            scroll_x = 0
        else:
            if row >= len(self._lines):
                return Strip.blank(width, base)
            index, start, end = row, 0, len(self._lines[row])
        kind = self._kinds[index]
        style = base
        if kind != "plain":
            style = base + self.get_component_rich_style(f"lazy-text--{kind}")
        line = self._lines[index]
        spans = self._spans[index] if index < len(self._spans) else ()
        if not self.wrap and line.isascii() and not spans:
            visible = line[scroll_x : scroll_x + width]
            return Strip([Segment(visible, style)], len(visible)).extend_cell_length(width, style)
        segments = self._segments(line, start, end, spans, style, kind)
        strip = Strip(segments)
        return strip.crop_extend(scroll_x, scroll_x + width, style)

    def _segments(
        self, line: str, start: int, end: int, spans: Spans, style: Style, kind: str
    ) -> list[Segment]:
        """The slice [start, end) of `line` with the parts inside `spans` emphasised."""
        if not spans or kind not in ("plain", "added", "removed"):
            return [Segment(line[start:end], style)]
        strong = style + self.get_component_rich_style(f"lazy-text--{kind}-word")
        segments: list[Segment] = []
        pos = start
        for span_start, span_end in spans:
            a, b = max(span_start, start), min(span_end, end)
            if a >= b:
                continue
            if a > pos:
                segments.append(Segment(line[pos:a], style))
            segments.append(Segment(line[a:b], strong))
            pos = b
        if pos < end:
            segments.append(Segment(line[pos:end], style))
        return segments


def _width(line: str) -> int:
    return len(line) if line.isascii() else cell_len(line)
