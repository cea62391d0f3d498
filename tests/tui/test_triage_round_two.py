"""Pilot tests of the triage walk-through's second round: no key trap, every answer on
screen, edits that keep their meaning and say what they do."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from helpers import fill, settle
from nightly_store import NIGHTLY, REASONS, failing_ids, nightly_context
from nightly_store import SUITE as NIGHTLY_SUITE
from test_triage_cause_snapshots import _prompt_regression
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input, OptionList, Static
from triage_repo import CASE_TEXT, TriageRepo
from triage_store import RED_RUN, SUITE

from redline.running.store import RunStore
from redline.vocabulary.records import TriageRecord
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.search import SearchScreen
from redline_tui.widgets.dialogs import ConfirmDialog, FormDialog, MessageDialog

pytestmark = pytest.mark.anyio

CASE_REL = "cases/support/0042-amount-suffix.yaml"


def _message(app: TriageApp) -> str:
    assert isinstance(app.screen, MessageDialog)
    return str(app.screen.query_one("#message-body", Static).render())


def _plain_ctx(tmp_path: Path, store: RunStore) -> TriageContext:
    root = tmp_path / "plain"
    root.mkdir()
    return TriageContext(store=store, root=root, today=lambda: dt.date(2026, 11, 30), user="ana")


async def test_a_second_query_typed_in_the_results_goes_to_the_query_box(
    triage_repo: TriageRepo,
) -> None:
    """Typing after a search never reaches the list (whose enter opens Step 2, whose `t`
    and `a` open Retire and Accept baseline): it is a new query."""
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot)
        await pilot.press(*"12k", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.hits
        assert isinstance(app.focused, DataTable)
        await pilot.press(*"approved", "enter")
        await settle(pilot)
        assert app.screen is screen
        box = screen.query_one("#search-text", Input)
        assert box.value == "approved"
        assert app.focused is screen.query_one("#search-hits", DataTable)
        assert "hold 'approved'" in str(screen.query_one("#search-status", Static).render())
        await pilot.press("t", "a")  # Step 2's Retire and Accept keys: plain text here
        assert box.value == "ta" and app.focused is box
        assert app.screen is screen


async def test_slash_returns_to_the_query_box_and_j_k_move_in_the_results(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot)
        await pilot.press(*"12k", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        table = screen.query_one("#search-hits", DataTable)
        await pilot.press("j", "j", "k")
        assert table.cursor_row == 1
        await pilot.press("slash")
        box = screen.query_one("#search-text", Input)
        assert app.focused is box and box.value == "12k"
        await pilot.press("tab")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)


async def test_step1_conclusion_is_reachable_at_80x24(
    tmp_path: Path, fixed_store: RunStore
) -> None:
    """The answer sits below the fold: PgDn, End and j scroll to it, Home back."""
    diagnosis = _prompt_regression()
    fixed_store.put_triage(
        TriageRecord(RED_RUN, SUITE, "0042-amount-suffix", "prompt", 1.0, diagnosis.to_json())
    )
    app = TriageApp(_plain_ctx(tmp_path, fixed_store))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#cases", DataTable)
        row = [str(k.value) for k in table.rows].index(f"{SUITE}/0042-amount-suffix")
        table.move_cursor(row=row)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RerunScreen)
        body = app.screen.query_one("#rerun-body", VerticalScroll)
        conclusion = app.screen.query_one("#cause-conclusion", Static)
        assert body.max_scroll_y > 0, "at 80x24 the conclusion must be below the fold"
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y == body.max_scroll_y
        assert conclusion.region.bottom <= body.region.bottom
        assert "p = 5.4e-05" in str(conclusion.render())
        await pilot.press("home")
        await pilot.pause()
        assert body.scroll_y == 0
        await pilot.press("j")
        await pilot.pause()
        assert body.scroll_y == 1
        await pilot.press("pagedown")
        await pilot.pause()
        assert body.scroll_y > 1


async def test_r_after_typing_samples_per_arm_starts_the_analysis(
    triage_repo: TriageRepo,
) -> None:
    """The digit field keeps only digits: `r` goes to the screen (it starts the analysis)."""
    app = TriageApp(triage_repo.ctx)
    started: list[bool] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RerunScreen)
        screen.action_start = lambda: started.append(True)  # type: ignore[method-assign]
        budget = screen.query_one("#cause-budget", Input)
        budget.focus()
        budget.value = ""
        await pilot.press("3", "0", "r")
        assert budget.value == "30"
        assert started == [True]
        assert app.focused is not budget


async def test_more_samples_keeps_the_rate_bar_and_says_what_it_becomes(
    triage_repo: TriageRepo,
) -> None:
    """A quality case with no `required` (one may miss) gets one written: 80% stays 80%."""
    text = CASE_TEXT.replace("required: 4\n", "")
    triage_repo.case_path.write_text(text, encoding="utf-8")
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, FormDialog)
        effect = dialog.query_one("#form-effect", Static)
        assert str(effect.render()) == "The bar 4/5 (80%) → 16/20 (80%): the same pass rate"
        await fill(pilot, "samples", "246")
        assert "4/5 (80%) → 197/246 (80%)" in str(effect.render())
        await fill(pilot, "samples", "20")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert "Staged alone" in _message(app)
    after = triage_repo.case_path.read_text(encoding="utf-8")
    assert after == text.replace("samples: 5\n", "samples: 20\nrequired: 16\n")


async def test_staging_next_to_other_staged_changes_says_so_and_names_the_files(
    triage_repo: TriageRepo,
) -> None:
    """A plain `git commit` would take the other staged file too: the command names ours."""
    triage_repo.stage("notes.txt", "unrelated\n")
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        await fill(pilot, "samples", "20")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        footer = str(app.screen.query_one("#confirm-footer", Static).render())
        assert "The index already holds other staged changes: notes.txt" in footer
        await pilot.press("y")
        await pilot.pause()
        message = _message(app)
    assert "Staged alone" not in message
    assert "The index also holds other staged changes (notes.txt)" in message
    assert message.rstrip().endswith(f"-- '{CASE_REL}'")
    triage_repo.repo.git.commit(
        "-m", "raise", "--", CASE_REL
    )  # the command shown commits only the case
    assert triage_repo.staged() == ["notes.txt"]


async def test_an_old_runs_groups_are_labelled_from_what_it_checked(tmp_path: Path) -> None:
    """Case files loosened after the run: their group names what the run recorded, never
    an assertion the run did not check; unchanged files still give their values."""
    ctx = nightly_context(tmp_path / "repo")
    folder = ctx.root / "cases" / NIGHTLY_SUITE
    for case in failing_ids(REASONS[1]):
        path = folder / f"{case}.yaml"
        path.write_text(path.read_text(encoding="utf-8").replace('"12,000"', '"Cause:"'))
    app = TriageApp(ctx, NIGHTLY)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("f")
            await settle(pilot)
            groups = app.screen.query_one("#groups", OptionList)
            labels = [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)]
    finally:
        ctx.store.close()
    assert " 10 × contains (assertion 2) (wrong) · 8 new, 2 flapping" in labels
    assert not any("Cause:" in label for label in labels)
    assert " 12 × is-json (malformed) · 12 still failing" in labels
