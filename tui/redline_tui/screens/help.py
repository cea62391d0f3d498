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

_GENERAL = (
    ("ctrl+p", "Command palette: every action by name"),
    ("escape", "Back to the previous screen"),
    ("q", "Quit"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close")]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__(classes="dialog-screen")
        self._under = under
        self.rows: list[tuple[str, str]] = [
            (b.key, b.description or b.action) for b in under.BINDINGS if isinstance(b, Binding)
        ]
        self.rows.extend(_GENERAL)

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

    def action_close(self) -> None:
        self.dismiss(None)
