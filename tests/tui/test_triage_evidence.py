"""The app's side of stored evidence: B skips concluded cases, Step 1 asks before it spends."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import settle, wait_until
from rich.console import Console
from textual.widgets import Static
from triage_repo import app_on_run

from cause_repo import BROKEN_PROMPT, CASE, SUITE, History
from cause_repo import prompt_regression as regression
from redline.deciding.arms import look_shares
from redline.deciding.cause import CauseAnalysis
from redline.running import runner
from redline.vocabulary.records import RunKind, RunRecord
from redline_tui.app import TriageApp
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.run import RunScreen
from redline_tui.widgets.cause_panel import arms_table
from redline_tui.widgets.dialogs import QuestionDialog
from servers import LoopbackLLMServer

pytestmark = pytest.mark.anyio
CASES = (CASE, "0043-amount")


@pytest.fixture
def red(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[History, RunRecord]]:
    ids = itertools.count()
    monkeypatch.setattr(runner, "new_run_id", lambda: f"v{next(ids):011d}")
    history, red_run = regression(tmp_path, llm_server, monkeypatch, CASES[1:])
    yield history, red_run
    history.close()


def _home(app: TriageApp) -> RunScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, RunScreen)
    return screen


def _batch(app: TriageApp) -> str:
    return str(_home(app).query_one("#batch-status", Static).render())


async def test_b_skips_cases_with_a_conclusion_unless_asked_to_analyse_them_again(
    red: tuple[History, RunRecord],
) -> None:
    history, red_run = red
    app = app_on_run(history, red_run.id)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("B")
        await wait_until(pilot, lambda: _batch(app).startswith("Batch done"))
        first = len(history.store.runs(kind=RunKind.RERUN))
        assert first == 4
        await pilot.press("B")  # both have a conclusion now: asked, and no skips them
        await wait_until(pilot, lambda: isinstance(app.screen, QuestionDialog))
        body = str(app.screen.query_one("#question-body", Static).render())
        assert "2 of the 2 failing cases shown already have a conclusion" in body
        await pilot.press("n")
        await settle(pilot)
        assert len(history.store.runs(kind=RunKind.RERUN)) == first
        assert _batch(app) == "Batch done: 2 of 2 analysed — 2 prompt"
        await pilot.press("B")
        await wait_until(pilot, lambda: isinstance(app.screen, QuestionDialog))
        await pilot.press("y")
        await wait_until(pilot, lambda: len(history.store.runs(kind=RunKind.RERUN)) == 2 * first)
        await wait_until(pilot, lambda: _batch(app).startswith("Batch done"))
    states = history.store.triage(red_run.id)
    assert {key[1]: t.state for key, t in states.items()} == dict.fromkeys(CASES, "prompt")


def _priced(history: History, threshold: float) -> None:
    path = history.root / "redline.toml"
    text = path.read_text("utf-8").replace(
        "concurrency = 8\n", f"concurrency = 8\nconfirm_cost_above = {threshold}\n"
    )
    text += '\n[prices."loopback:good-model"]\ninput_per_mtok = 2000.0\noutput_per_mtok = 8000.0\n'
    path.write_text(text, "utf-8")


async def test_step_1_shows_its_cost_and_asks_over_the_threshold(
    red: tuple[History, RunRecord],
) -> None:
    history, red_run = red
    _priced(history, 0.01)
    app = app_on_run(history, red_run.id)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        status = str(screen.query_one("#cause-status", Static).render())
        assert "estimated cost $" in status
        assert (
            "at most 80 sample(s): the reference prompt up to 40, your configuration up to 40"
            in status
        )
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, QuestionDialog))
        await wait_until(pilot, lambda: bool(app.screen.query("#question-body")))
        body = str(app.screen.query_one("#question-body", Static).render())
        assert "over $0.01 (confirm_cost_above)" in body
        await pilot.press("n")
        await settle(pilot)
        assert "Not started: nothing was sent" in str(
            screen.query_one("#cause-status", Static).render()
        )
        assert not history.store.runs(kind=RunKind.RERUN)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, QuestionDialog))
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.diagnosis is not None)
    assert history.store.triage(red_run.id)[(SUITE, CASE)].state == "prompt"
    assert len(history.store.runs(kind=RunKind.RERUN)) == 2


def _four_nightlies(
    tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch, prefix: str
) -> History:
    ids = itertools.count()
    monkeypatch.setattr(runner, "new_run_id", lambda: f"{prefix}{next(ids):011d}")
    history = History.create(tmp_path, llm_server)
    monkeypatch.chdir(history.root)
    for _ in range(4):
        history.run()
    return history


@pytest.fixture
def red_after_nightlies(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[History, RunRecord]]:
    """Four green nightlies on main (one is the reference), then a red run on a branch."""
    history = _four_nightlies(tmp_path, llm_server, monkeypatch, "s")
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    red_run = history.run()
    yield history, red_run
    history.close()


async def test_step_1_estimates_the_plan_that_stored_evidence_raises(
    red_after_nightlies: tuple[History, RunRecord],
) -> None:
    history, red_run = red_after_nightlies
    _priced(history, 0.01)
    with CauseAnalysis(history.store, history.config, red_run, history.case(red_run)) as plan:
        ref, mine = plan.current()
        expected = look_shares([(ref.model_id, 15), (mine.model_id, 0)], 40, 40)
        assert ref.stored_counts[1] == 15 and [ref.most, mine.most] == expected
    app = app_on_run(history, red_run.id)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        # Three stored nightlies of the reference, none of yours: up to 2 × 2 × 40 drawn.
        plan_text = (
            f"at most 160 sample(s): the reference prompt up to {expected[0]}, "
            f"your configuration up to {expected[1]}"
        )
        await wait_until(
            pilot, lambda: plan_text in str(screen.query_one("#cause-status", Static).render())
        )
        await pilot.press("r")
        await wait_until(pilot, lambda: bool(app.screen.query("#question-body")))
        body = str(app.screen.query_one("#question-body", Static).render())
        assert plan_text in body and "over $0.01 (confirm_cost_above)" in body
        await pilot.press("n")
        await settle(pilot)
        assert not history.store.runs(kind=RunKind.RERUN)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, QuestionDialog))
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.diagnosis is not None)
        d = screen.diagnosis
        assert d is not None and d.cause.value == "prompt"
        assert all(a.drawn_counts[1] <= a.most for a in d.arms)


@pytest.fixture
def drifted(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[History, RunRecord]]:
    """Four green nightlies, then a night where the server behind the same id fails."""
    history = _four_nightlies(tmp_path, llm_server, monkeypatch, "d")
    llm_server.model_pass_rates["good-model"] = 0.0
    red_run = history.run()
    llm_server.model_pass_rates["good-model"] = 1.0
    yield history, red_run
    history.close()


async def test_step_1_names_drift_and_shows_the_stored_runs_it_counted(
    drifted: tuple[History, RunRecord],
) -> None:
    history, red_run = drifted
    app = app_on_run(history, red_run.id)
    async with app.run_test(size=(130, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        await pilot.press("r")
        await wait_until(pilot, lambda: screen.diagnosis is not None)
        conclusion = str(screen.query_one("#cause-conclusion", Static).render())
        assert conclusion.startswith(" drift ")
        assert "nothing in your repository changed" in conclusion
        d = screen.diagnosis
        assert d is not None
        console = Console(record=True, width=130)
        console.print(arms_table(d.red, d.arms, d.confidence))
        assert "incl. 15/15 stored, from runs" in console.export_text()
        await pilot.press("escape")
        await settle(pilot)
        home = _home(app)
        assert "drift" in home.table.triage[f"{SUITE}/{CASE}"].state
