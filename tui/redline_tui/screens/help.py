"""`?`: every key binding of the screen underneath, and of the app."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from redline_tui.widgets.dialogs import DIALOG_CSS

_GENERAL = (
    ("?", "This help"),
    ("ctrl+p", "Command palette: every action by name"),
    ("escape", "Back to the previous screen"),
    ("q", "Quit"),
)
#: Keys every list answers to, whichever screen it is on.
_LIST_KEYS = (
    ("↑ ↓  j k", "Move one row"),
    ("g  Home", "First row"),
    ("G  End", "Last row"),
    ("PgUp PgDn", "One page up or down"),
    ("enter", "Open the highlighted row"),
)


def _key_display(binding: Binding) -> str:
    if binding.key_display:
        return binding.key_display
    return ",".join(_KEY_NAMES.get(key, key) for key in binding.key.split(","))


_KEY_NAMES = {"slash": "/", "question_mark": "?"}


class HelpScreen(ModalScreen[None]):
    """Every key of the screen underneath, its own guide, and the app's keys."""

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__(classes="dialog-screen")
        self._under = under
        # Keys as the user types them (`/`, not Textual's name `slash`).
        self.rows: list[tuple[str, str]] = [
            (_key_display(b), b.tooltip or b.description or b.action)
            for b in under.BINDINGS
            if isinstance(b, Binding)
        ]
        own = {key for key, _ in self.rows}
        self.rows.extend((key, text) for key, text in (*_GENERAL, *_LIST_KEYS) if key not in own)
        #: The screen's own explanation (its filter language, what its chart shows…).
        self.guide: str = getattr(under, "HELP", "")

    def compose(self) -> ComposeResult:
        table = Table(
            title=f"Keys: {type(self._under).__name__.removesuffix('Screen')}",
            expand=True,
            show_edge=False,
        )
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("does")
        for key, text in self.rows:
            table.add_row(Text(key), Text(text))
        with VerticalScroll(classes="dialog help"):
            yield Static(table)
            if self.guide:
                yield Static(Text(self.guide), id="help-guide")

    def action_close(self) -> None:
        self.dismiss(None)
