"""Step 1's parts: the form that starts a cause analysis, and the panel that shows it —
the reference and what changed, each arm's counts live, the conclusion."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, ProgressBar, Static

from redline.deciding.cause import (
    ArmCounts,
    CauseProgress,
    ChangeItem,
    Diagnosis,
    Settings,
    p_value_label,
)
from redline.deciding.reference import Reference
from redline.errors import RedlineError
from redline.presentation import CAUSE_STYLES
from redline.vocabulary.causes import Cause


def reference_text(reference: Reference) -> Text:
    text = Text("Reference  ", style="bold")
    text.append(reference.short, style="bold cyan")
    if reference.branch:
        text.append(f" on {reference.branch}")
    if reference.date:
        text.append(f" · {reference.date[:16].replace('T', ' ')}")
    text.append(f"\n           {reference.reason}", style="dim")
    return text


def changes_text(changes: tuple[ChangeItem, ...], notes: tuple[str, ...] = ()) -> Text:
    text = Text("Changed    ", style="bold")
    if not changes:
        text.append("nothing that the case sees (prompt, model, case, vars, settings)")
    for i, change in enumerate(changes):
        text.append(", " if i else "")
        text.append(change.kind.value, style="bold")
        text.append(f" ({change.detail})")
    for note in notes:
        text.append(f"\n           {note}", style="yellow")
    return text


def where_text(
    reference: Reference, changes: tuple[ChangeItem, ...], notes: tuple[str, ...]
) -> Text:
    """The reference and what changed, as Step 1 shows them above the arms."""
    text = reference_text(reference)
    text.append("\n")
    text.append_text(changes_text(changes, notes))
    return text


def arms_table(red: ArmCounts | None, arms: tuple[ArmCounts, ...], confidence: float) -> Table:
    """The red run and every arm side by side: counts, rate and interval."""
    table = Table(expand=True, show_edge=False, pad_edge=False)
    table.add_column("Arm", ratio=3)
    table.add_column("Passes", justify="right")
    table.add_column("Rate", justify="right")
    table.add_column(f"{confidence:.0%} interval", justify="right")
    table.add_column("Run")
    for arm in (*((red,) if red is not None else ()), *arms):
        if arm.skipped is not None:
            table.add_row(Text(arm.label), Text("skipped", style="dim"), "", "", "")
            continue
        low, high = arm.interval(confidence)
        rate = f"{arm.rate:.0%}" if arm.samples else "—"
        table.add_row(
            _arm_label(arm),
            Text(f"{arm.passes}/{arm.samples}"),
            Text(rate),
            Text(f"{low:.0%}–{high:.0%}" if arm.samples else "—"),
            Text(arm.run_id or "—", style="dim"),
        )
    return table


def _arm_label(arm: ArmCounts) -> Text:
    """The arm's label; below it, the stored runs its counts include."""
    text = Text(arm.label)
    if arm.stored:
        passes, samples = arm.stored_counts
        runs = ", ".join(r.run_id for r in arm.stored[-3:])
        more = f" and {len(arm.stored) - 3} more" if len(arm.stored) > 3 else ""
        text.append(
            f"\n  incl. {passes}/{samples} stored, from run{'s' if len(arm.stored) > 1 else ''} "
            f"{runs}{more}",
            style="dim",
        )
    return text


def conclusion_text(diagnosis: Diagnosis) -> Text:
    text = Text()
    text.append(f" {diagnosis.cause.value} ", style=f"reverse {CAUSE_STYLES[diagnosis.cause]}")
    text.append("  ")
    text.append(diagnosis.sentence)
    if diagnosis.cause is Cause.NOISE:
        text.append("\nm raises its samples · t retires it (with a reason)", style="bold")
    for key, value in diagnosis.p_values.items():
        text.append(f"\np = {value:.3g}: {p_value_label(key)}", style="dim")
    return text


def stopped_note(diagnosis: Diagnosis) -> str:
    return (
        f"Stopped at {diagnosis.progress:.0%} of the budget; finished samples kept. r starts again."
    )


class DigitsInput(Input):
    """A whole-number field that lets every other typed key through to the screen's keys:
    after typing a count, `r` starts the analysis instead of vanishing into the field."""

    async def _on_key(self, event: events.Key) -> None:
        """Runs before Input's own handler; a non-digit skips it and bubbles on."""
        if event.is_printable and event.character is not None and not event.character.isdigit():
            event.prevent_default()
            self.screen.set_focus(None)


class CauseForm(Vertical):
    """The reference to compare against (derived when empty) and the samples per arm."""

    DEFAULT_CSS = """
    CauseForm { height: auto; padding: 0 1; }
    CauseForm Horizontal { height: auto; }
    CauseForm Label { padding: 1 1 0 0; }
    CauseForm #cause-reference { width: 1fr; }
    CauseForm #cause-budget { width: 12; }
    """

    def __init__(self) -> None:
        super().__init__(id="rerun-form")
        self.reference = Input(id="cause-reference", placeholder="derived from the run")
        self.budget = DigitsInput(str(Settings.budget), id="cause-budget", type="integer")

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label("Reference")
            yield self.reference
            yield Label("Samples per arm")
            yield self.budget

    def settings(self) -> Settings | str:
        """The analysis settings as typed, or what is wrong with them."""
        budget = self.budget.value.strip()
        if not budget.isdigit() or int(budget) < 1:
            return "Samples per arm must be a whole number of at least 1"
        try:
            return Settings(budget=int(budget), reference=self.reference.value.strip() or None)
        except RedlineError as exc:
            return str(exc)


class CausePanel(Vertical):
    """Where the evidence comes from, the arms as they fill, and the conclusion."""

    DEFAULT_CSS = """
    CausePanel { height: auto; }
    CausePanel #cause-where, CausePanel #cause-status { padding: 0 1; height: auto; }
    CausePanel #cause-arms, CausePanel #cause-conclusion { height: auto; padding: 1 1 0 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        self._where = Static("", id="cause-where")
        self._bar = ProgressBar(id="cause-bar", show_eta=False)
        self._bar.display = False
        self._status = Static("", id="cause-status")
        self._arms = Static("", id="cause-arms")
        self._conclusion = Static("", id="cause-conclusion")
        self._red: ArmCounts | None = None
        self.confidence = Settings.confidence

    def compose(self) -> ComposeResult:
        yield self._where
        yield self._bar
        yield self._status
        yield self._arms
        yield self._conclusion

    def status(self, message: str, style: str = "") -> None:
        self._status.update(Text(message, style=style))

    def failed(self, message: str) -> None:
        self._bar.display = False
        self.status(message, "bold red")

    def show_where(self, where: Text, red: ArmCounts) -> None:
        self._red = red
        self._where.update(where)

    def show_plan(self, arms: tuple[ArmCounts, ...]) -> None:
        """The arms an analysis would draw, before it draws any."""
        self._arms.update(arms_table(self._red, arms, self.confidence))

    def show_diagnosis(self, diagnosis: Diagnosis) -> None:
        self._red = diagnosis.red
        self.confidence = diagnosis.confidence
        self._where.update(where_text(diagnosis.reference, diagnosis.changes, diagnosis.notes))
        self._arms.update(arms_table(diagnosis.red, diagnosis.arms, diagnosis.confidence))
        self._conclusion.update(conclusion_text(diagnosis))
        self._bar.display = False

    def show_started(self, confidence: float) -> None:
        self.confidence = confidence
        self._conclusion.update("")
        self.show_running(None)

    def show_running(self, progress: CauseProgress | None) -> None:
        self._bar.display = True
        if progress is None:
            self.status("Preparing: reading the reference and the changes from git…")
            return
        self._bar.update(total=progress.total, progress=progress.done)
        self._arms.update(arms_table(self._red, progress.arms, self.confidence))
        self.status(
            f"running {progress.fraction:.0%} · {progress.done} of at most {progress.total} "
            "samples · runs in the background (x stops it)"
        )
