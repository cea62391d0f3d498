"""Modal dialogs: a form that asks for values, and a confirmation showing the exact change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from redline_tui.widgets.lazy_text import LazyText


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    default: str = ""
    required: bool = True


class FormDialog(ModalScreen[dict[str, str] | None]):
    """Asks for a few values; a required field left empty keeps the dialog open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, fields: Sequence[Field], note: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._fields = tuple(fields)
        self._note = note

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._title), classes="dialog-title")
            if self._note:
                yield Static(Text(self._note), classes="dialog-note")
            for field in self._fields:
                yield Label(Text(field.label + (" (required)" if field.required else "")))
                yield Input(value=field.default, id=f"field-{field.key}")
            yield Static("", id="form-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _submit(self) -> None:
        values = {
            f.key: self.query_one(f"#field-{f.key}", Input).value.strip() for f in self._fields
        }
        missing = [f.label for f in self._fields if f.required and not values[f.key]]
        if missing:
            self.query_one("#form-error", Static).update(Text("Required: " + ", ".join(missing)))
            return
        self.dismiss(values)


class ConfirmDialog(ModalScreen[bool]):
    """Shows the exact change (a unified diff) and the commit message; y applies, n cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Apply"),
        Binding("n,escape", "cancel", "Cancel"),
    ]

    def __init__(
        self, title: str, diff_lines: Sequence[str], kinds: Sequence[str], footer: str
    ) -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._diff_lines = list(diff_lines)
        self._kinds = list(kinds)
        self._footer = footer

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog confirm"):
            yield Label(Text(self._title), classes="dialog-title")
            yield LazyText(self._diff_lines, self._kinds, id="confirm-diff")
            yield Static(Text(self._footer), id="confirm-footer", classes="dialog-note")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply and stage (y)", variant="warning", id="apply")
                yield Button("Cancel (n)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "apply")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class MessageDialog(ModalScreen[None]):
    """A result or a refusal the user must read before going on."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "close", "Close")]

    def __init__(self, title: str, body: str) -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._title), classes="dialog-title")
            yield Static(Text(self._body), id="message-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", id="close")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class QuestionDialog(ModalScreen[bool]):
    """A yes/no question (e.g. before spending money); y goes ahead, n or escape does not."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, body: str, yes: str) -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._body = body
        self._yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._title), classes="dialog-title")
            yield Static(Text(self._body), id="question-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._yes} (y)", variant="warning", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
