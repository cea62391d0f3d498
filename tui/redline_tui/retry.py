"""Retry a run's infrastructure failures from the app: `redline run --retry-transport` in a worker.

A provider's bad hour leaves a nightly inconclusive. Drawing again only the slots lost to
transport errors (and, when asked, those cut off at max_tokens) completes the same run:
the first attempts stay as evidence, the case and run results are recomputed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from textual.screen import Screen

from redline.config import Config
from redline.errors import RedlineError
from redline.running.runner import RunProgress, resume_options, run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.records import RunRecord
from redline.vocabulary.verdicts import Verdict
from redline_tui.context import TriageContext
from redline_tui.messages import RetryProgressed
from redline_tui.widgets.dialogs import Choice, MessageDialog, PickerDialog


@dataclass(frozen=True)
class RetryPlan:
    """What a retry would draw again, counted from the stored samples."""

    run: RunRecord
    transport: int
    truncated: int

    def verdicts(self, with_truncated: bool) -> tuple[Verdict, ...]:
        return (Verdict.TRANSPORT, Verdict.TRUNCATED) if with_truncated else (Verdict.TRANSPORT,)

    def describe(self) -> str:
        parts = [f"{self.transport} transport"]
        if self.truncated:
            parts.append(f"{self.truncated} truncated")
        return " and ".join(parts)


def retry_plan(store: RunStore, run: RunRecord) -> RetryPlan:
    counts = store.verdict_counts(run.id).values()
    return RetryPlan(
        run,
        sum(c.get(Verdict.TRANSPORT, 0) for c in counts),
        sum(c.get(Verdict.TRUNCATED, 0) for c in counts),
    )


def retry_run(
    store: RunStore,
    config: Config,
    run: RunRecord,
    verdicts: tuple[Verdict, ...],
    progress: Callable[[RunProgress], None] | None = None,
) -> RunRecord:
    """Draw again the slots of `run` with these verdicts; raises the engine's UsageError when
    the prompt, model or case inputs changed since the run (a retry would mix evidence)."""
    options, paths = resume_options(run, config, verdicts)
    suites = load_suites(paths, config)
    return run_suites(suites, config, store, options, progress)


async def retry_transport(screen: Screen[None], ctx: TriageContext, run: RunRecord) -> bool:
    """Ask, then draw again in a thread; True when the run was completed (reload it).

    How far it got reaches `screen` as `RetryProgressed` messages.
    """
    app = screen.app
    if ctx.config is None:
        await app.push_screen_wait(
            MessageDialog("No configuration", "No redline config was found: cannot call a model.")
        )
        return False
    config = ctx.config
    plan = retry_plan(ctx.store, run)
    if not plan.transport and not plan.truncated:
        await app.push_screen_wait(
            MessageDialog(
                "Nothing to retry",
                f"Run {run.id} has no sample lost to a transport error or cut off at max_tokens.",
            )
        )
        return False
    picked = await app.push_screen_wait(_retry_picker(plan))
    if picked is None:
        return False
    verdicts = plan.verdicts(picked["choice"] == "truncated")

    def progress(p: RunProgress) -> None:
        # Called on the run's thread: post_message is the thread-safe way back.
        screen.post_message(
            RetryProgressed(
                f"Retrying run {run.id}: {p.done} of {'up to ' if p.up_to else ''}"
                f"{p.total} sample(s) drawn"
            )
        )

    screen.post_message(RetryProgressed(f"Retrying run {run.id}…"))
    try:
        record = await asyncio.to_thread(retry_run, ctx.store, config, run, verdicts, progress)
    except RedlineError as exc:
        screen.post_message(RetryProgressed(None))
        await app.push_screen_wait(MessageDialog("Refused: the run cannot be retried", str(exc)))
        return False
    result = record.result.value if record.result is not None else record.status.value
    screen.post_message(
        RetryProgressed(f"Run {run.id} retried: {plan.describe()} drawn again; now {result}.")
    )
    return True


def _retry_picker(plan: RetryPlan) -> PickerDialog:
    """Transport failures only, or the truncated samples too."""
    choices = []
    if plan.transport:
        choices.append(Choice(f"{plan.transport} transport sample(s)", "transport", _NOTE))
    if plan.truncated:
        choices.append(
            Choice(
                f"{plan.transport} transport and {plan.truncated} truncated sample(s)",
                "truncated",
                _NOTE + " Truncated samples were cut off at max_tokens: drawing them again "
                "only helps when the cut was chance.",
            )
        )
    return PickerDialog(
        f"Draw again the infrastructure failures of run {plan.run.id}?",
        choices,
        [],
        "Enter draws them again; Esc cancels.",
    )


_NOTE = (
    "Only those slots are drawn again, on the same run; the first attempts are kept as "
    "evidence, the case and run results recomputed. Refused when the prompt, model or case "
    "inputs changed since the run."
)


__all__ = ["RetryPlan", "retry_plan", "retry_run", "retry_transport"]
