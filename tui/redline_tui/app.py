"""The triage app: a red run, walked case by case through the three triage steps."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from redline.config import Config
from redline.running.store import RunStore
from redline_tui.cause_jobs import CauseJobs
from redline_tui.context import TriageContext
from redline_tui.messages import (
    CauseProgressed,
    FilesStaged,
    OpenStep,
    SampleSource,
    Step,
    TriageMarked,
)
from redline_tui.screens.help import HelpScreen
from redline_tui.screens.history import HistoryScreen
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.run import RunScreen


class TriageApp(App[None]):
    """`redline triage`: Run home, then per case Rerun → Outputs → History, and Compare."""

    CSS_PATH = "triage.tcss"
    TITLE = "redline triage"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self, ctx: TriageContext, run_id: str | None = None, *, notice: str | None = None
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self._run_id = run_id
        self.jobs = CauseJobs(self, ctx.store)
        ctx.jobs = self.jobs
        self._notice = notice

    def on_mount(self) -> None:
        self.push_screen(RunScreen(self.ctx, self._run_id))
        if self._notice:
            self.notify(self._notice, severity="warning", timeout=15, markup=False)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    @on(OpenStep)
    def open_step(self, event: OpenStep) -> None:
        """Steps replace each other above the Run screen, so escape always returns home."""
        screen = self.step_screen(event)
        if isinstance(self.screen, RunScreen) or not _is_step(self.screen):
            self.push_screen(screen)
        else:
            self.switch_screen(screen)

    @on(FilesStaged)
    def files_staged(self, event: FilesStaged) -> None:
        """Case files or baselines changed: the home screen's marks are stale."""
        self.ctx.forget_baselines()
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen):
                screen.reload()

    @on(CauseProgressed)
    def cause_progressed(self, event: CauseProgressed) -> None:
        """A background analysis moved on: every screen showing that case redraws it."""
        self.jobs.update(event)
        batched = any(
            isinstance(s, RunScreen)
            and s.cause_batch is not None
            and event.key in s.cause_batch.active
            for s in self.screen_stack
        )
        for screen in self.screen_stack:
            if isinstance(screen, (RunScreen, RerunScreen)):
                screen.cause_update(event)
        # A batch's conclusions land in the Triage column and its one summary, not a toast
        # per case over the Verdicts and History columns.
        if event.diagnosis is not None and not batched:
            case = f"{event.key[1]}/{event.key[2]}"
            self.notify(f"{case}: {event.diagnosis.cause.value}", timeout=4)

    @on(TriageMarked)
    def triage_marked(self, event: TriageMarked) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen):
                screen.show_triage_state(event.key, event.state)

    async def action_quit(self) -> None:
        """Running analyses stop (their samples are stored) so the app can close at once."""
        self.jobs.cancel_all()
        await super().action_quit()

    def on_unmount(self) -> None:
        self.jobs.cancel_all()

    def step_screen(self, event: OpenStep) -> Screen[None]:
        if event.step is Step.RERUN:
            return RerunScreen(self.ctx, event.run, event.case)
        if event.step is Step.OUTPUTS:
            sources = event.sources or (SampleSource("red run", event.run.id),)
            return OutputsScreen(self.ctx, event.run, event.case, sources, event.sample)
        return HistoryScreen(self.ctx, event.run, event.case)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Every key binding of this screen", self.action_help)
        for binding in screen.BINDINGS:
            if not isinstance(binding, Binding) or not binding.description:
                continue
            action = binding.action

            async def run(action: str = action) -> None:
                await self.run_action(action, screen)

            yield SystemCommand(binding.description, f"key: {binding.key}", run)


def _is_step(screen: Screen[object]) -> bool:
    return bool(getattr(screen, "STEP", None))


def open_triage(*, store: RunStore, config: Config, run_id: str | None, notice: str | None) -> None:
    """The `triage` app's entry point (`redline.apps` in pyproject.toml)."""
    context = TriageContext(store=store, root=config.root, config=config)
    TriageApp(context, run_id, notice=notice).run()
