"""What the three triage steps share: their case, step keys and the case actions."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.screen import Screen

from redline.vocabulary.records import CaseRecord, RunRecord
from redline_tui.actions import start_case_action
from redline_tui.context import TriageContext
from redline_tui.messages import OpenStep, Step

STEP_BINDINGS: list[BindingType] = [
    Binding("escape", "back", "Back"),
    # The step tabs at the top name 1 2 3 already: the footer keeps room for the actions.
    Binding("1", "step(1)", "Rerun", show=False),
    Binding("2", "step(2)", "Outputs", show=False),
    Binding("3", "step(3)", "History", show=False),
    Binding("m", "case_action('raise_samples')", "More samples"),
    Binding("t", "case_action('retire')", "Retire"),
    Binding("l", "case_action('loosen')", "Loosen"),
    Binding("a", "case_action('accept_baseline')", "Accept baseline"),
]


def step_title(step: Step, run: RunRecord, case: CaseRecord) -> Text:
    """The three step tabs (clickable: each opens its step) and the case they are about."""
    names = {Step.RERUN: "Rerun", Step.OUTPUTS: "Outputs", Step.HISTORY: "History"}
    text = Text()
    for s in Step:
        look = Style(bold=True, reverse=True) if s is step else Style(underline=True)
        text.append(
            f" {s.value} {names[s]} ",
            style=look + Style(meta={"@click": f"screen.step({s.value})"}),
        )
        text.append(" ")
    text.append(f"  {case.suite}/{case.case_id}", style="bold")
    text.append(
        f"  run {run.id}: {case.passes}/{case.samples} passed, {case.required} required "
        f"({case.tier})"
    )
    return text


class CaseStepScreen(Screen[None]):
    """A step screen about one case of one run."""

    STEP: ClassVar[Step]

    def __init__(self, ctx: TriageContext, run: RunRecord, case: CaseRecord) -> None:
        super().__init__()
        self.ctx = ctx
        self.run = run
        self.case = case

    def action_back(self) -> None:
        self.dismiss(None)

    def action_step(self, step: int) -> None:
        if step != self.STEP:
            self.post_message(OpenStep(Step(step), self.run, self.case))

    def action_case_action(self, name: str) -> None:
        start_case_action(self, self.ctx, self.run, self.case, name)
