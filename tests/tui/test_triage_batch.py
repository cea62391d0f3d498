"""Batch Step 1: one key queues the cause analysis of every failing case of a group."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import settle, wait_until
from textual.widgets import DataTable, Static
from triage_repo import app_on_run

from cause_repo import CASE, SUITE, History
from cause_repo import prompt_regression as regression
from redline.running import runner
from redline.vocabulary.records import RunKind, RunRecord
from redline_tui.app import TriageApp
from redline_tui.batch import arm_concurrency, batch_width
from redline_tui.screens.run import RunScreen
from servers import LoopbackLLMServer

pytestmark = pytest.mark.anyio
#: Three cases failing the same way on the broken prompt, one group.
CASES = (CASE, "0043-amount", "0044-amount")


@pytest.fixture
def red_group(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[History, RunRecord]]:
    """Green on main, then a branch whose prompt drops the amount: all three cases red."""
    ids = itertools.count()
    monkeypatch.setattr(runner, "new_run_id", lambda: f"b{next(ids):011d}")
    history, red = regression(tmp_path, llm_server, monkeypatch, CASES[1:])
    yield history, red
    history.close()


def _home(app: TriageApp) -> RunScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, RunScreen)
    return screen


def _cells(app: TriageApp) -> dict[str, str]:
    table = _home(app).query_one("#cases", DataTable)
    return {str(k.value): str(table.get_cell(k, "triage")) for k in table.rows}


def _batch(app: TriageApp) -> str:
    return str(_home(app).query_one("#batch-status", Static).render())


async def test_one_key_queues_step_1_for_a_group_and_ends_with_a_summary(
    red_group: tuple[History, RunRecord],
) -> None:
    history, red = red_group
    app = app_on_run(history, red.id)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("f", "enter")  # the only group, as the table
        await settle(pilot)
        assert sorted(_cells(app)) == sorted(f"{SUITE}/{c}" for c in CASES)
        home = _home(app)
        seen: list[str] = []
        show = home._show_batch

        def record() -> None:
            show()
            seen.append(_batch(app))

        home._show_batch = record  # type: ignore[method-assign]
        await pilot.press("B")
        await wait_until(pilot, lambda: _batch(app).startswith("Batch done"))
        assert _batch(app) == "Batch done: 3 of 3 analysed — 3 prompt"
        # A bounded queue: two analyses at once (concurrency 8), the third waits its turn.
        assert batch_width(8) == 2
        # and their arms, drawn side by side, keep within the run's 8 requests in flight.
        assert arm_concurrency(8, 2) * 3 * 2 <= 8
        assert seen[0] == "Batch: 0 of 3 analysed, 2 running, 1 queued (x stops it) — no conclusion"
        assert seen[1].startswith("Batch: 1 of 3 analysed, 2 running, 0 queued")
        assert set(_cells(app).values()) == {"prompt"}
    states = history.store.triage(red.id)
    assert {key[1]: t.state for key, t in states.items()} == dict.fromkeys(CASES, "prompt")
    arms = history.store.runs(kind=RunKind.RERUN)
    assert all(r.parent_id == red.id for r in arms) and len(arms) == 6


async def test_stopping_a_batch_starts_nothing_more_and_says_so(
    red_group: tuple[History, RunRecord], llm_server: LoopbackLLMServer
) -> None:
    history, red = red_group
    llm_server.latency_ms = 200
    app = app_on_run(history, red.id)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("B")
        await wait_until(pilot, lambda: "running " in "".join(_cells(app).values()))
        await pilot.press("x")
        await wait_until(pilot, lambda: _batch(app).startswith("Batch stopped"))
        assert _batch(app).startswith("Batch stopped: 2 of 3 analysed — ")
        assert "queued" not in _batch(app)
    # The third case was never started: no triage state, no arm of it.
    states = history.store.triage(red.id)
    assert (SUITE, CASES[2]) not in states
    assert {k[1]: t.state for k, t in states.items()} == dict.fromkeys(CASES[:2], "stopped")
