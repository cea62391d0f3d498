"""Pilot tests of the triage walk-through's second round: no key trap, every answer on
screen, edits that keep their meaning and say what they do."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import fill, settle
from nightly_store import NIGHTLY, REASONS, failing_ids, nightly_context
from nightly_store import SUITE as NIGHTLY_SUITE
from test_triage_cause_snapshots import _prompt_regression
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input, OptionList, Static
from triage_repo import CASE_TEXT, TriageRepo
from triage_store import CASES, OLD_MODEL, RED_RUN, SUITE, _run_record, _store_run

from redline.deciding.history import case_history
from redline.running.store import RunStore
from redline.vocabulary.records import TriageRecord
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.search import SearchScreen
from redline_tui.widgets.dialogs import ConfirmDialog, FormDialog, MessageDialog
from redline_tui.widgets.row_table import ColumnSpec, fit_columns

pytestmark = pytest.mark.anyio

CASE_REL = "cases/support/0042-amount-suffix.yaml"


def _message(app: TriageApp) -> str:
    assert isinstance(app.screen, MessageDialog)
    return str(app.screen.query_one("#message-body", Static).render())


@pytest.fixture
def nightly_ctx(tmp_path: Path) -> Iterator[TriageContext]:
    ctx = nightly_context(tmp_path / "repo")
    yield ctx
    ctx.store.close()


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


async def test_an_old_runs_groups_are_labelled_from_what_it_checked(
    nightly_ctx: TriageContext,
) -> None:
    """Case files loosened after the run: their group names what the run recorded, never
    an assertion the run did not check; unchanged files still give their values."""
    ctx = nightly_ctx
    folder = ctx.root / "cases" / NIGHTLY_SUITE
    for case in failing_ids(REASONS[1]):
        path = folder / f"{case}.yaml"
        path.write_text(path.read_text(encoding="utf-8").replace('"12,000"', '"Cause:"'))
    app = TriageApp(ctx, NIGHTLY)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        groups = app.screen.query_one("#groups", OptionList)
        labels = [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)]
    assert " 10 × contains (assertion 2) (wrong) · 8 new, 2 flapping" in labels
    assert not any("Cause:" in label for label in labels)
    assert " 12 × is-json (malformed) · 12 still failing" in labels


def _comparison_run(store: RunStore) -> str:
    """A candidate model's run `--against` the red run: the same cases, the same failures."""
    run_id = "cafe00000009"
    record = replace(
        _run_record(run_id, 24, model=OLD_MODEL), args={"against": RED_RUN}, git_branch="migrate"
    )
    _store_run(store, record, [(spec, spec.runs[-1]) for spec in CASES], 24)
    return run_id


async def test_j_and_k_move_in_the_groups_list(nightly_ctx: TriageContext) -> None:
    app = TriageApp(nightly_ctx, NIGHTLY)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        groups = app.screen.query_one("#groups", OptionList)
        assert groups.highlighted == 0
        await pilot.press("j", "j", "k")
        assert groups.highlighted == 1
        await pilot.press("enter")
        await settle(pilot)
        assert "group: contains '12,000' (wrong)" in str(
            app.screen.query_one("#run-status", Static).render()
        )


@pytest.mark.parametrize(
    ("size", "hidden"),
    [((80, 24), ["Req", "Marks", "Tier"]), ((100, 30), ["Tier"]), ((140, 40), [])],
    ids=["80-columns", "100-columns", "140-columns"],
)
async def test_home_columns_fit_the_terminal_and_name_what_is_left_out(
    triage_repo: TriageRepo, size: tuple[int, int], hidden: list[str]
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#cases", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert {"Result", "Triage", "Case", "Passes", "Verdicts", "History"} <= set(labels)
        assert not set(hidden) & set(labels)
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= size[0] - 2
        status = str(app.screen.query_one("#run-status", Static).render())
        if hidden:
            assert f"not shown at this width: {', '.join(hidden)}" in status
        else:
            assert "not shown" not in status
        case = str(table.get_cell(f"{SUITE}/0042-amount-suffix", "case"))
        assert case == f"{SUITE}/0042-amount-suffix"


async def test_compare_says_its_sort_and_lists_each_part_of_the_split(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)

        def status() -> str:
            return str(screen.query_one("#compare-status", Static).render())

        assert "largest drop first" in status()
        await pilot.press("s")
        assert "sorted by case ▲ ascending" in status()
        await pilot.press("s", "s", "s")  # case → A → B → Δ
        assert "sorted by Δ ▲ ascending" in status()
        await pilot.press("r")
        assert "sorted by Δ ▼ descending" in status()
        assert "Δ ▼" in [str(c.label) for c in screen.table.columns.values()]
        await pilot.press("f")
        assert status().startswith("3 only B fails")
        assert {d.case_id for d in screen.rows} == {
            "0042-amount-suffix",
            "0007-marginal-tone",
            "0013-json-shape",
        }
        await pilot.press("f")
        assert status().startswith("0 only A fails") and not screen.rows


async def test_a_comparison_run_is_marked_compared_with_its_reference_and_out_of_histories(
    triage_repo: TriageRepo,
) -> None:
    """Cases both runs fail that passed before on the same case file are not called case
    problems; the candidate's run is no point of the case's history."""
    store = triage_repo.ctx.store
    candidate = _comparison_run(store)
    history = case_history(store, "0042-amount-suffix", SUITE)
    assert candidate not in {p.run_id for p in history.scheduled}
    assert [p.run_id for p in history.reruns if p.against] == [candidate]
    app = TriageApp(triage_repo.ctx, candidate)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        header = str(app.screen.query_one("#run-header", Static).render())
        assert f"run {candidate} [comparison run]" in header
        assert f"compared with run {RED_RUN}" in header
        assert "branch migrate" in header
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison is not None and screen.comparison.a.run.id == RED_RUN
        text = str(screen.header.render())
        assert "Both fail, yet passed before with the same case file" in text
        assert "0042-amount-suffix" in text
        assert "likely case problems" not in text
        await pilot.press("escape", "R")
        await settle(pilot)
        runs = app.screen.query_one("#runs-table", DataTable)
        assert str(runs.get_cell(candidate, "kind")) == "⇄compare"


def test_fit_columns_cuts_the_less_important_first_and_names_none_of_the_kept() -> None:
    specs = [
        ColumnSpec("case", "Case", 30, 0, 12),
        ColumnSpec("rate", "Rate", 6, 0),
        ColumnSpec("reasons", "Reasons", 60, 1, 20),
        ColumnSpec("tier", "Tier", 8, 2),
    ]
    assert fit_columns(specs, 200) == {"case": 30, "rate": 6, "reasons": 60, "tier": 8}
    # 80 cells: the case keeps its full name; the reasons are cut; the tier still fits.
    assert fit_columns(specs, 80) == {"case": 30, "rate": 6, "reasons": 28, "tier": 8}
    # 62 cells: the tier gives way before the reasons go below their least.
    assert fit_columns(specs, 62) == {"case": 30, "rate": 6, "reasons": 20}
    # Too narrow for anything but the priority-0 columns: they stay, cut to their least.
    assert fit_columns(specs, 20) == {"case": 12, "rate": 6}
