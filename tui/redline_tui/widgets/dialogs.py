"""Modal dialogs: a form that asks for values, and a confirmation showing the exact change."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from redline_tui.widgets.lazy_text import LazyText


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    default: str = ""
    required: bool = True
    #: Says what is wrong with a typed value (None when it is fine); the dialog stays open.
    check: Callable[[str], str | None] | None = None
    #: Whether leading and trailing spaces are dropped (not for literal text values).
    strip: bool = True


def whole_number(minimum: int) -> Callable[[str], str | None]:
    """A check for a whole number of at least `minimum`."""

    def check(text: str) -> str | None:
        if not text.strip().isdigit():
            return f'"{text}" is not a whole number'
        if int(text) < minimum:
            return f"must be at least {minimum}"
        return None

    return check


def future_date(today: dt.date) -> Callable[[str], str | None]:
    """A check for a date written YYYY-MM-DD, today or later."""

    def check(text: str) -> str | None:
        try:
            day = dt.date.fromisoformat(text.strip())
        except ValueError:
            return f'"{text}" is not a date written YYYY-MM-DD'
        if day < today:
            return f"{day.isoformat()} has passed already; give a later date"
        return None

    return check


@dataclass(frozen=True)
class Choice:
    """One entry of a picker: what the list shows, and the value it stands for."""

    label: str
    value: str
    #: Shown under the list while this entry is highlighted.
    detail: str = ""


#: The look every dialog shares: a bordered box centred over the screen it asks about.
#: Unscoped (the dialogs set SCOPED_CSS off): the rules style the dialog screens themselves.
DIALOG_CSS = """
.dialog-screen { align: center middle; }
.dialog {
    width: 90%;
    max-width: 110;
    height: auto;
    max-height: 90%;
    border: thick $accent;
    background: $surface;
    padding: 0 1;
}
.dialog.confirm, .dialog.help { height: 90%; }
.dialog.picker #choices { height: auto; max-height: 8; }
.dialog-title { text-style: bold; padding: 0 0 1 0; }
.dialog-note { height: auto; color: $text-muted; }
.dialog-error { height: auto; color: $text-error; }
.dialog-buttons { height: auto; align-horizontal: right; }
.dialog-buttons Button { margin: 0 1; }
#confirm-diff { height: 1fr; border: round $primary-muted; }
"""


class FormDialog(ModalScreen[dict[str, str] | None]):
    """Asks for a few values; a required field left empty keeps the dialog open."""

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

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
        values = _read_fields(self, self._fields)
        if values is not None:
            self.dismiss(values)


def _read_fields(screen: ModalScreen[Any], fields: Sequence[Field]) -> dict[str, str] | None:
    """The fields' values, or None after showing in `#form-error` what is missing or wrong."""
    values = {}
    for f in fields:
        value = screen.query_one(f"#field-{f.key}", Input).value
        values[f.key] = value.strip() if f.strip else value
    error = screen.query_one("#form-error", Static)
    missing = [f.label for f in fields if f.required and not values[f.key].strip()]
    if missing:
        error.update(Text("Required: " + ", ".join(missing)))
        return None
    for f in fields:
        problem = f.check(values[f.key]) if f.check is not None else None
        if problem is not None:
            error.update(Text(f"{f.label}: {problem}"))
            screen.query_one(f"#field-{f.key}", Input).focus()
            return None
    return values


class PickerDialog(FormDialog):
    """Pick one entry from a list (its detail shown below it), then fill in a few fields.

    `on_pick(value)` returns per-field defaults and labels for the highlighted entry, so a
    form can show the current value of what was picked. The result holds `choice` too.
    """

    def __init__(
        self,
        title: str,
        choices: Sequence[Choice],
        fields: Sequence[Field],
        note: str = "",
        initial: int = 0,
        on_pick: Callable[[str], Mapping[str, tuple[str, str]]] | None = None,
        check: Callable[[dict[str, str]], str | None] | None = None,
    ) -> None:
        super().__init__(title, fields, note)
        self._choices = tuple(choices)
        self._initial = initial
        self._on_pick = on_pick
        self._check = check

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog picker"):
            yield Label(Text(self._title), classes="dialog-title")
            if self._note:
                yield Static(Text(self._note), classes="dialog-note")
            yield OptionList(
                *(Option(Text(c.label), id=str(i)) for i, c in enumerate(self._choices)),
                id="choices",
            )
            yield Static("", id="choice-detail", classes="dialog-note")
            for field in self._fields:
                yield Label(
                    Text(field.label + (" (required)" if field.required else "")),
                    id=f"label-{field.key}",
                )
                yield Input(value=field.default, id=f"field-{field.key}")
            yield Static("", id="form-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        options = self.query_one("#choices", OptionList)
        if self._choices:
            options.highlighted = min(self._initial, len(self._choices) - 1)
        options.focus()

    @property
    def picked(self) -> int | None:
        return self.query_one("#choices", OptionList).highlighted

    @on(OptionList.OptionHighlighted, "#choices")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        choice = self._choices[event.option_index]
        self.query_one("#choice-detail", Static).update(Text(choice.detail))
        if self._on_pick is None:
            return
        for key, (label, default) in self._on_pick(choice.value).items():
            self.query_one(f"#label-{key}", Label).update(Text(label))
            self.query_one(f"#field-{key}", Input).value = default

    @on(OptionList.OptionSelected, "#choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if self._fields:
            self.query_one(f"#field-{self._fields[0].key}", Input).focus()
        else:
            self._submit()

    def _submit(self) -> None:
        error = self.query_one("#form-error", Static)
        index = self.picked
        if index is None:
            error.update(Text("Pick an entry from the list first"))
            return
        values = _read_fields(self, self._fields)
        if values is None:
            return
        values["choice"] = self._choices[index].value
        problem = self._check(values) if self._check is not None else None
        if problem is not None:
            error.update(Text(problem))
            return
        self.dismiss(values)


class ConfirmDialog(ModalScreen[bool]):
    """Shows the exact change (a unified diff) and the commit message; y applies, n cancels."""

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

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

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

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

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

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
