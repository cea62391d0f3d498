"""Modal dialogs: a form that asks for values, and a confirmation showing the exact change."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from redline_tui.widgets.lazy_text import LazyText
from redline_tui.widgets.row_table import RowList


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
.dialog-effect { height: auto; text-style: bold; }
.dialog-buttons { height: auto; align-horizontal: right; }
.dialog-buttons Button { margin: 0 1; }
#confirm-diff { height: 1fr; border: round $primary-muted; }
"""


class FormDialog(ModalScreen[dict[str, str] | None]):
    """Asks for a few values; a required field left empty keeps the dialog open."""

    DEFAULT_CSS = DIALOG_CSS
    SCOPED_CSS = False

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        fields: Sequence[Field],
        note: str = "",
        effect: Callable[[dict[str, str]], str] | None = None,
    ) -> None:
        """`effect(values)` says what the typed values would do, redrawn as they change."""
        super().__init__(classes="dialog-screen")
        self._title = title
        self._fields = tuple(fields)
        self._note = note
        self._effect = effect
        self.form = FormFields(self._fields)
        self.effect_line = Static("", id="form-effect", classes="dialog-effect")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self._title), classes="dialog-title")
            if self._note:
                yield Static(Text(self._note), classes="dialog-note")
            yield self.form
            if self._effect is not None:
                yield self.effect_line
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._show_effect()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show_effect()

    def _show_effect(self) -> None:
        if self._effect is not None:
            self.effect_line.update(Text(self._effect(self.form.values())))

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
        values = self.form.read()
        if values is not None:
            self.dismiss(values)


class FormFields(Vertical):
    """A dialog's labelled inputs and the line under them saying what is missing or wrong."""

    DEFAULT_CSS = """
    FormFields { height: auto; }
    """

    def __init__(self, fields: Sequence[Field]) -> None:
        super().__init__()
        self._fields = tuple(fields)
        self._labels = {
            f.key: Label(Text(f.label + (" (required)" if f.required else "")), id=f"label-{f.key}")
            for f in self._fields
        }
        self._inputs = {f.key: Input(value=f.default, id=f"field-{f.key}") for f in self._fields}
        self._error = Static("", id="form-error", classes="dialog-error")

    def compose(self) -> ComposeResult:
        for field in self._fields:
            yield self._labels[field.key]
            yield self._inputs[field.key]
        yield self._error

    def values(self) -> dict[str, str]:
        """The fields' values as typed (stripped where the field says so)."""
        values = {}
        for f in self._fields:
            value = self._inputs[f.key].value
            values[f.key] = value.strip() if f.strip else value
        return values

    def read(self) -> dict[str, str] | None:
        """The fields' values, or None after showing what is missing or wrong."""
        values = self.values()
        missing = [f.label for f in self._fields if f.required and not values[f.key].strip()]
        if missing:
            self.show_error("Required: " + ", ".join(missing))
            return None
        for f in self._fields:
            problem = f.check(values[f.key]) if f.check is not None else None
            if problem is not None:
                self.show_error(f"{f.label}: {problem}")
                self._inputs[f.key].focus()
                return None
        return values

    def show_error(self, message: str) -> None:
        self._error.update(Text(message))

    def relabel(self, key: str, label: str, default: str) -> None:
        """Another entry was picked: this field asks for (and starts from) its value."""
        self._labels[key].update(Text(label))
        self._inputs[key].value = default

    def focus_first(self) -> bool:
        """Focus the first field; False when there is none."""
        if not self._fields:
            return False
        self._inputs[self._fields[0].key].focus()
        return True


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
        self.options = RowList(
            *(Option(Text(c.label), id=str(i)) for i, c in enumerate(self._choices)), id="choices"
        )
        self.detail = Static("", id="choice-detail", classes="dialog-note")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog picker"):
            yield Label(Text(self._title), classes="dialog-title")
            if self._note:
                yield Static(Text(self._note), classes="dialog-note")
            yield self.options
            yield self.detail
            yield self.form
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        options = self.options
        if self._choices:
            options.highlighted = min(self._initial, len(self._choices) - 1)
        options.focus()

    @property
    def picked(self) -> int | None:
        return self.options.highlighted

    @on(OptionList.OptionHighlighted, "#choices")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        choice = self._choices[event.option_index]
        self.detail.update(Text(choice.detail))
        if self._on_pick is None:
            return
        for key, (label, default) in self._on_pick(choice.value).items():
            self.form.relabel(key, label, default)

    @on(OptionList.OptionSelected, "#choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if not self.form.focus_first():
            self._submit()

    def _submit(self) -> None:
        index = self.picked
        if index is None:
            self.form.show_error("Pick an entry from the list first")
            return
        values = self.form.read()
        if values is None:
            return
        values["choice"] = self._choices[index].value
        problem = self._check(values) if self._check is not None else None
        if problem is not None:
            self.form.show_error(problem)
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
