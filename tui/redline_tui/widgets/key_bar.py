"""The footer: the current screen's keys, then Help, Palette and Quit, on one or two lines.

Textual's Footer recomposes a widget per key whenever bindings change anywhere; on a
screen opened for every case that cost more than everything else on it. Keys are laid
out whole (never cut mid-word); when two lines cannot hold them all, the screen's last
keys give way first, so Help and Quit are always shown (`?` lists every key).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.widget import Widget

#: Shown on every screen after its own keys.
_APP_KEYS = (("?", "Help"), ("^p", "Palette"), ("q", "Quit"))
_MAX_LINES = 2


def layout_keys(pairs: list[tuple[str, str]], width: int) -> list[list[tuple[str, str]]]:
    """The screen's pairs then the app's, greedily in lines of `width` cells, at most two;
    screen pairs are dropped from the end until the app's fit."""
    own = list(pairs)
    while True:
        lines = _fill([*own, *_APP_KEYS], width)
        if len(lines) <= _MAX_LINES or not own:
            return lines[:_MAX_LINES]
        own.pop()


def _fill(pairs: list[tuple[str, str]], width: int) -> list[list[tuple[str, str]]]:
    lines: list[list[tuple[str, str]]] = [[]]
    used = 0
    for key, description in pairs:
        size = _pair_width(key, description)
        if lines[-1] and used + size > width:
            lines.append([])
            used = 0
        lines[-1].append((key, description))
        used += size
    return lines


def _pair_width(key: str, description: str) -> int:
    return cell_len(key) + 2 + cell_len(description) + 2


class KeyBar(Widget):
    """`key Description` for each shown binding of the screen, then the app-wide keys."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: auto;
        background: $footer-background;
        color: $footer-foreground;
    }
    """

    def on_mount(self) -> None:
        self._pairs = [
            (self.app.get_key_display(b), b.description)
            for b in self.screen.BINDINGS
            if isinstance(b, Binding) and b.show and b.description
        ]

    def _lines(self, width: int) -> list[list[tuple[str, str]]]:
        return layout_keys(getattr(self, "_pairs", []), max(width, 1))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def on_resize(self) -> None:
        self.refresh(layout=True)

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="crop")
        for number, line in enumerate(self._lines(self.size.width)):
            if number:
                text.append("\n")
            for key, description in line:
                text.append(f" {key} ", style="bold reverse")
                text.append(f" {description} ")
        return text
