"""The footer: the current screen's keys, drawn once as one line of text.

Textual's Footer recomposes a widget per key whenever bindings change anywhere; on a
screen opened for every case that cost more than everything else on it.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

#: Shown on every screen after its own keys.
_APP_KEYS = (("?", "Help"), ("^p", "Palette"), ("q", "Quit"))


class KeyBar(Widget):
    """`key Description` for each shown binding of the screen, then the app-wide keys."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
    }
    """

    def on_mount(self) -> None:
        self._text = self._keys_text()

    def _keys_text(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        pairs = [
            (self.app.get_key_display(b), b.description)
            for b in self.screen.BINDINGS
            if isinstance(b, Binding) and b.show and b.description
        ]
        for key, description in (*pairs, *_APP_KEYS):
            text.append(f" {key} ", style="bold reverse")
            text.append(f" {description} ")
        return text

    def render(self) -> Text:
        return getattr(self, "_text", Text())
