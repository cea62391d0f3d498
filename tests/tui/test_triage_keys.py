"""Keys, tabs, the runs screen and a terminal: what a keyboard-first user does first."""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
from helpers import settle
from textual.widgets import DataTable
from triage_repo import TriageRepo
from triage_store import EARLIER_RUNS, RED_RUN, _run_record, _store_run

from redline.cli import main
from redline.vocabulary.records import CaseOutcome
from redline_tui.app import TriageApp
from redline_tui.screens.history import HistoryScreen
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.run import RunScreen
from redline_tui.screens.runs import RunsScreen
from redline_tui.screens.step import CaseStepScreen

pytestmark = pytest.mark.anyio


async def test_g_G_home_end_move_the_case_table_cursor(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#cases", DataTable)
        last = table.row_count - 1
        await pilot.press("G")
        assert table.cursor_row == last
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("end")
        assert table.cursor_row == last
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("j", "j", "k")
        assert table.cursor_row == 1


async def test_keys_typed_before_the_run_is_loaded_are_not_lost_or_misrouted(
    triage_repo: TriageRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`down` `2` typed at once open the second case's Outputs, not a hidden filter."""
    store = triage_repo.ctx.store
    loaded = threading.Event()
    read_counts = store.outcome_counts

    def slow_counts(run_id: str) -> dict[CaseOutcome, int]:
        loaded.wait(30)  # a big store: the run's counts and rows arrive after the keys
        return read_counts(run_id)

    monkeypatch.setattr(store, "outcome_counts", slow_counts)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        home = app.screen
        assert isinstance(home, RunScreen)
        await pilot.press("down", "2")
        assert home.run is None  # still loading in its worker
        assert isinstance(app.screen, RunScreen)
        loaded.set()
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)
        assert app.screen.case.case_id == home.shown[1].case_id
        assert home.case_filter.text == ""


async def test_step_tabs_are_clickable(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)
        # The title reads " 1 Rerun   2 Outputs   3 History  …": column 26 is in "3 History".
        await pilot.click(".step-title", offset=(26, 0))
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.click(".step-title", offset=(14, 0))
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)


async def test_the_runs_screen_switches_the_home_screen_to_another_run(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        home = app.screen
        assert isinstance(home, RunScreen) and home.run is not None and home.run.id == RED_RUN
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.screen is home
        assert home.run is not None and home.run.id == EARLIER_RUNS[-1]
        assert EARLIER_RUNS[-1] in str(home.query_one("#run-header").render())


async def test_history_dims_or_hides_runs_of_other_branches(triage_repo: TriageRepo) -> None:
    """The triaged run is on `main`; an experiment on a feature branch is not its history."""
    store = triage_repo.ctx.store
    from dataclasses import replace

    from triage_store import CASES, _v

    feature = replace(_run_record("feedbeef0001", 22), git_branch="exp")
    _store_run(store, feature, [(CASES[0], _v("wwwww"))], 22)
    main_run = replace(_run_record("feedbeef0002", 25), git_branch="main")
    _store_run(store, main_run, [(CASES[0], _v("oowwo"))], 25)
    app = TriageApp(triage_repo.ctx, "feedbeef0002")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen) and screen.case.case_id == "0042-amount-suffix"
        table = screen.query_one("#history-table", DataTable)
        runs = [p.run_id for p in screen.shown]
        assert "feedbeef0001" in runs
        row = table.get_row_at(runs.index("feedbeef0001"))
        assert str(row[6]) == "exp@0123456" and "dim" in str(row[6].spans)
        assert "1 run(s) of other branches dimmed" in str(
            screen.query_one("#history-trend").render()
        )
        await pilot.press("b")
        await pilot.pause()
        assert "feedbeef0001" not in [p.run_id for p in screen.shown]


async def test_quitting_with_an_action_dialog_open_leaves_no_coroutine_unawaited(
    triage_repo: TriageRepo,
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = TriageApp(triage_repo.ctx)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("down", "2")
            await settle(pilot)
            for key in ("t", "escape", "m", "escape", "a"):
                await pilot.press(key)
                await pilot.pause()
            assert isinstance(app.screen, CaseStepScreen) is False  # a dialog is open
            app.exit()
        import gc

        gc.collect()
    unawaited = [w for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []


def test_triage_exits_2_at_once_without_a_terminal(tmp_path: Path) -> None:
    """Piped, it says it needs a terminal instead of drawing into the pipe."""
    from triage_store import build_store

    build_store(tmp_path / "redline.db").close()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from redline.cli import main; sys.exit(main(sys.argv[1:]))",
            "triage",
            "--store",
            "redline.db",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "needs a terminal" in result.stderr and "redline show" in result.stderr
    assert "\x1b[" not in result.stdout


def test_triage_without_a_terminal_via_main(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from triage_store import build_store

    build_store(tmp_path / "redline.db").close()
    monkeypatch.chdir(tmp_path)
    assert main(["triage", RED_RUN, "--store", str(tmp_path / "redline.db")]) == 2
    assert "needs a terminal" in capsys.readouterr().err
