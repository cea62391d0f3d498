"""Step 1 and the Triage column against real runs, a real repository and the loopback server."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fill, settle, wait_until
from textual.widgets import DataTable, Static
from triage_repo import TriageRepo, app_on_run
from triage_store import RED_RUN

from cause_repo import CASE, SUITE, History
from cause_repo import prompt_regression as regression
from redline.deciding.cause import ArmKind
from redline.running import runner
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import RunKind, RunRecord, RunStatus
from redline_tui.app import TriageApp
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.run import RunScreen
from servers import LoopbackLLMServer

pytestmark = pytest.mark.anyio
ROW = f"{SUITE}/{CASE}"


@pytest.fixture
def prompt_regression(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[History, RunRecord]]:
    """A passing run on main, then a red run on a branch whose prompt drops the amount."""
    ids = itertools.count()
    monkeypatch.setattr(runner, "new_run_id", lambda: f"b{next(ids):011d}")
    history, red = regression(tmp_path, llm_server, monkeypatch)
    yield history, red
    history.close()


def _cell(app: TriageApp) -> str:
    screen = app.screen_stack[1]
    assert isinstance(screen, RunScreen)
    return str(screen.query_one("#cases", DataTable).get_cell(ROW, "triage"))


def _status(app: TriageApp) -> str:
    return str(app.screen.query_one("#cause-status", Static).render())


async def test_step_1_names_the_cause_and_the_triage_column_keeps_it(
    prompt_regression: tuple[History, RunRecord],
) -> None:
    history, red = prompt_regression
    app = app_on_run(history, red.id)
    async with app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert _cell(app) == ""
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        where = str(screen.query_one("#cause-where", Static).render())
        assert "on main" in where and "the last run that passed this case" in where
        assert "prompt (user prompt template)" in where
        await pilot.press("r")
        await settle(pilot)
        assert screen.diagnosis is not None and screen.diagnosis.cause is Cause.PROMPT
        conclusion = str(screen.query_one("#cause-conclusion", Static).render())
        assert conclusion.startswith(" prompt ") and "regressed it" in conclusion
        await pilot.press("2")  # Step 2 lists each arm's raw outputs under its own name
        await settle(pilot)
        outputs = app.screen
        assert isinstance(outputs, OutputsScreen)
        labels = {label.split()[0] + " " + label.split()[1] for label, _ in outputs.samples}
        assert labels == {"red run", "ref prompt", "yours again"}
        await pilot.press("escape")
        await settle(pilot)
        assert _cell(app) == "prompt"
    # Reopening the app on the same run: the state comes back from the store.
    again = app_on_run(history, red.id)
    async with again.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert _cell(again) == "prompt"
        await pilot.press("enter")
        await settle(pilot)
        screen = again.screen
        assert isinstance(screen, RerunScreen)
        assert screen.diagnosis is not None and screen.diagnosis.cause is Cause.PROMPT
        assert _status(again).startswith("Stored result")


async def test_a_rerun_keeps_running_after_leaving_step_1(
    prompt_regression: tuple[History, RunRecord], llm_server: LoopbackLLMServer
) -> None:
    history, red = prompt_regression
    llm_server.latency_ms = 250
    app = app_on_run(history, red.id)
    async with app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("r")
        await wait_until(pilot, lambda: _status(app).startswith("running"))
        await pilot.press("escape")  # leave Step 1 while samples are in flight
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert _cell(app).startswith("running ")
        await pilot.press("2")  # and look at another step of the case meanwhile
        await pilot.pause()
        await pilot.press("1")  # back to Step 1: it shows the analysis where it is
        await wait_until(
            pilot, lambda: "Reference" in str(app.screen.query_one("#cause-where").render())
        )
        await pilot.press("escape")
        await settle(pilot)  # the analysis finishes in the background
        assert _cell(app) == "prompt"
    arms = history.store.runs(kind=RunKind.RERUN)
    assert len(arms) == 2
    assert all(r.status is RunStatus.FINISHED and r.parent_id == red.id for r in arms)
    assert all(len(history.store.samples(r.id)) == 10 for r in arms)
    assert history.store.triage(red.id)[(SUITE, CASE)].state == "prompt"


async def test_stopping_keeps_finished_samples_and_shows_them_at_once(
    prompt_regression: tuple[History, RunRecord], llm_server: LoopbackLLMServer
) -> None:
    history, red = prompt_regression
    llm_server.latency_ms = 400
    app = app_on_run(history, red.id)
    async with app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        await pilot.press("r")
        await wait_until(
            pilot,
            lambda: (
                screen.ctx.jobs is not None
                and (p := screen.ctx.jobs.progress(screen.key)) is not None
                and p.done >= 2
            ),
        )
        await pilot.press("x")
        await settle(pilot)
        assert _status(app).startswith("Stopped at ")
        shown = screen.diagnosis
        assert shown is not None and shown.stopped
        for arm in shown.arms:
            if arm.run_id is None:  # stopped before this arm drew anything
                assert arm.samples == 0
                continue
            stored = history.store.samples(arm.run_id)
            assert arm.samples == len(stored) < 10  # the display is the store, now
        assert sum(arm.samples for arm in shown.arms) >= 2
        await pilot.press("escape")
        await settle(pilot)
        assert _cell(app).startswith("stopped ")
    assert history.store.triage(red.id)[(SUITE, CASE)].state == "stopped"
    assert {r.status for r in history.store.runs(kind=RunKind.RERUN)} == {RunStatus.INTERRUPTED}
    assert ArmKind.REFERENCE_PROMPT in {a.kind for a in shown.arms}


async def test_retiring_a_case_shows_retired_in_the_triage_column(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # 0042-amount-suffix
        await pilot.press("t")
        await pilot.pause()
        await fill(pilot, "reason", "sat at 4/5 for weeks")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("enter")  # close the "staged" message
        await settle(pilot)
        table = app.screen.query_one("#cases", DataTable)
        assert str(table.get_cell("support/0042-amount-suffix", "triage")) == "retired"
    stored = triage_repo.ctx.store.triage(RED_RUN)[("support", "0042-amount-suffix")]
    assert stored.state == "retired"
