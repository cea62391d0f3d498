"""A nightly of 200 cases with 40 failing for 5 reasons: groups, trends, search, quarantine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import git
import pytest
from helpers import fill, settle
from nightly_store import (
    FLAPPING,
    NIGHTLY,
    PREAMBLE,
    QUARANTINED,
    REASONS,
    SUITE,
    failing_ids,
    nightly_context,
)
from textual.widgets import DataTable, OptionList, Static

from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.run import RunScreen
from redline_tui.screens.search import SearchScreen
from redline_tui.widgets.dialogs import ConfirmDialog, FormDialog, MessageDialog

pytestmark = pytest.mark.anyio
SIZE = (140, 40)


@pytest.fixture
def nightly(tmp_path: Path) -> Iterator[TriageContext]:
    ctx = nightly_context(tmp_path / "repo")
    yield ctx
    ctx.store.close()


def _home(app: TriageApp) -> RunScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, RunScreen)
    return screen


def _rows(app: TriageApp) -> list[str]:
    table = _home(app).query_one("#cases", DataTable)
    return [str(key.value) for key in table.rows]


def _text(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_the_five_failure_groups_with_counts_and_trends_and_one_opened(
    nightly: TriageContext,
) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = _text(app, "#run-status")
        assert "200 of 200 cases · 40 failing in 5 group(s) (f)" in status
        await pilot.press("f")
        await settle(pilot)
        groups = app.screen.query_one("#groups", OptionList)
        assert groups.display and groups.has_focus
        labels = [str(groups.get_option_at_index(i).prompt) for i in range(groups.option_count)]
        assert labels == [
            " 12 × is-json (malformed) · 12 still failing",
            " 10 × contains '12,000' (wrong) · 8 new, 2 flapping",
            "  8 × not-contains 'I cannot help' (refused) · 8 new",
            "  6 × max-chars 400 (wrong) · 6 new",
            "  4 × regex 'INV-[0-9]+' (wrong) · 4 new",
        ]
        await pilot.press("down", "enter")  # the second group, as a filtered table
        await settle(pilot)
        assert not groups.display
        assert sorted(_rows(app)) == sorted(f"{SUITE}/{c}" for c in failing_ids(REASONS[1]))
        assert "group: contains '12,000' (wrong)" in _text(app, "#run-status")
        table = _home(app).query_one("#cases", DataTable)
        marks = {str(k.value): str(table.get_cell(k, "marks")) for k in table.rows}
        assert marks[f"{SUITE}/{FLAPPING[0]}"] == "flapping"
        assert marks[f"{SUITE}/0020-invoice"] == "new"
        await pilot.press("escape")  # every case again
        await settle(pilot)
        assert len(_rows(app)) == 200
        marks_first = str(table.get_cell(f"{SUITE}/0000-invoice", "marks"))
        assert marks_first == "still failing (3 runs)"


async def test_quarantined_cases_are_listed_on_their_own_with_release_question(
    nightly: TriageContext,
) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        listing = _text(app, "#quarantined")
        assert listing.startswith("Quarantined (1), not counted in the result:")
        assert f"{SUITE}/{QUARANTINED}  5/5 passing again — release?" in listing
        assert "INV-150" in listing
        table = _home(app).query_one("#cases", DataTable)
        assert str(table.get_cell(f"{SUITE}/{QUARANTINED}", "marks")) == "quarantined"


async def test_a_phrase_found_across_all_outputs_opens_its_sample_in_step_2(
    nightly: TriageContext,
) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"here is the json", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        # 12 malformed cases × 3 bad samples each, and nothing else says it.
        assert len(screen.hits) == 36
        assert {h.case_id for h in screen.hits} == set(failing_ids(REASONS[0]))
        assert _text(app, "#search-status").startswith(
            "36 sample(s) in 12 case(s) hold 'here is the json'"
        )
        table = screen.query_one("#search-hits", DataTable)
        assert PREAMBLE in str(table.get_cell_at((0, 4)))
        await pilot.press("down", "enter")  # the second hit: 0000-invoice sample 1
        await settle(pilot)
        outputs = app.screen
        assert isinstance(outputs, OutputsScreen)
        assert outputs.case.case_id == "0000-invoice"
        row = outputs.query_one("#samples", DataTable).cursor_row
        assert outputs.samples[row][1].index == 1
        assert (
            PREAMBLE in _text(app, "#sample-reasons") or PREAMBLE in outputs.samples[row][1].output
        )
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)


async def test_slash_with_a_quote_searches_outputs_and_reasons_instead_of_filtering(
    nightly: TriageContext,
) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *'"no match for', "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert {h.found_in for h in screen.hits} == {"reason"}
        assert {h.case_id for h in screen.hits} == set(failing_ids(REASONS[4]))
        await pilot.press("escape")
        await settle(pilot)
        assert len(_rows(app)) == 200  # the table was never filtered by the phrase


async def test_quarantining_a_flapping_case_stages_its_file_with_the_diff(
    nightly: TriageContext,
) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *FLAPPING[0], "enter")
        await settle(pilot)
        assert _rows(app) == [f"{SUITE}/{FLAPPING[0]}"]
        table = _home(app).query_one("#cases", DataTable)
        assert str(table.get_cell(f"{SUITE}/{FLAPPING[0]}", "marks")) == "flapping"
        await pilot.press("Q")
        await settle(pilot)
        assert isinstance(app.screen, FormDialog)
        await fill(pilot, "reason", "flaps between runs while upstream rounds totals")
        await fill(pilot, "ticket", "INV-12")
        await fill(pilot, "until", "2026-12-14")
        await pilot.press("enter")
        await settle(pilot)
        confirm = app.screen
        assert isinstance(confirm, ConfirmDialog)
        footer = str(confirm.query_one("#confirm-footer", Static).render())
        assert "quarantine case 0012-invoice until 2026-12-14 (INV-12)" in footer
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, MessageDialog)
        await pilot.press("enter")
        await settle(pilot)
        assert str(table.get_cell(f"{SUITE}/{FLAPPING[0]}", "triage")) == "quarantined"
    path = nightly.root / "cases" / SUITE / f"{FLAPPING[0]}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.endswith(
        "quarantine:\n  reason: flaps between runs while upstream rounds totals\n"
        "  ticket: INV-12\n  until: 2026-12-14\n"
    )
    assert nightly.config is not None
    case = next(
        c
        for s in load_suites(nightly.config.suites, nightly.config)
        for c in s.cases
        if c.id == FLAPPING[0]
    )
    assert case.quarantine is not None and case.quarantine.until == dt.date(2026, 12, 14)
    staged = git.Repo(nightly.root).git.diff("--cached", "--name-only").splitlines()
    assert staged == [f"cases/{SUITE}/{FLAPPING[0]}.yaml"]


async def test_a_quarantine_date_in_the_past_keeps_the_form_open(nightly: TriageContext) -> None:
    app = TriageApp(nightly, NIGHTLY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("Q")
        await settle(pilot)
        await fill(pilot, "reason", "flaky")
        await fill(pilot, "until", "2026-11-01")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FormDialog)
        assert "has passed already" in str(app.screen.query_one("#form-error").render())


def test_nightly_store_is_what_the_tests_say(nightly: TriageContext) -> None:
    store: RunStore = nightly.store
    cases = store.cases(NIGHTLY)
    assert len(cases) == 200
    assert sum(1 for c in cases if c.result.value == "fail") == 40
