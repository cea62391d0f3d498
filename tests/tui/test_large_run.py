"""The Run screen on a merged night's size of run: its cases are read a page at a time,
the failures first, and every one of them stays reachable."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import settle
from textual.widgets import Input, Static

from redline.deciding.case_rows import CaseView, sort_cases
from redline.vocabulary.verdicts import Verdict
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.run import RunScreen
from redline_tui.widgets.case_table import PAGE
from runfactory import CaseSpec, RunSpec, open_store, write_run

pytestmark = pytest.mark.anyio

CASES = 20_000
FAILING = [f"{i:05d}" for i in range(0, CASES, 97)]


def _large_run(tmp_path: Path) -> TriageContext:
    store = open_store(tmp_path)
    specs = [
        CaseSpec(
            f"{i:05d}",
            [Verdict.WRONG if i % 97 == 0 else Verdict.OK],
            suite="nightly",
            tier="contract",
        )
        for i in range(CASES)
    ]
    write_run(store, RunSpec("big000000001", specs, manifest={}))
    return TriageContext(store=store, root=tmp_path)


def _status(app: TriageApp) -> str:
    return str(app.screen.query_one("#run-status", Static).render())


async def test_large_run_shows_failures_first_and_scrolls_to_the_last_case(
    tmp_path: Path,
) -> None:
    app = TriageApp(_large_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert f"{CASES} of {CASES} cases · {len(FAILING)} failing" in _status(app)
        table = screen.table
        assert len(screen.shown) < CASES  # read a page at a time, not the whole run
        assert [c.case_id for c in screen.shown[:PAGE]] == FAILING[:PAGE]
        assert table.get_row_at(0)[2].plain == "nightly/00000"

        for _ in range(12):
            await pilot.press("pagedown")
        await settle(pilot)
        assert len(screen.shown) > PAGE  # scrolling read the next pages
        assert [c.case_id for c in screen.shown[: len(FAILING)]] == FAILING

        await pilot.press("end")
        await settle(pilot)
        assert len(screen.shown) == CASES
        last = screen.selected_case()
        assert last is not None and last.case_id == "19999"
        assert table.cursor_row == CASES - 1
        assert table.get_row_at(table.cursor_row)[2].plain == "nightly/19999"

        await pilot.press("home")
        await pilot.press("slash")
        screen.query_one("#case-filter", Input).value = "v:wrong"
        await settle(pilot)
        assert [c.case_id for c in screen.shown] == FAILING[:PAGE]  # the filter ran in SQL
        assert f"{len(FAILING)} of {CASES} cases" in _status(app)


def test_the_store_pages_a_view_in_the_order_the_table_sorts(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    specs = [
        CaseSpec(
            f"c{i:03d}",
            [Verdict.OK if (i * 7 + k) % 3 else Verdict.WRONG for k in range(i % 4 + 1)],
            suite=f"suite-{i % 3}",
            tier=("quality", "contract")[i % 2],
        )
        for i in range(60)
    ]
    write_run(store, RunSpec("order0000001", specs, manifest={}))
    cases = store.cases("order0000001")
    for column in ("outcome", "case", "tier", "passes", "required"):
        for reverse in (False, True):
            view = CaseView(sort_column=column, reverse=reverse)
            paged = [
                c
                for offset in range(0, len(cases), 7)
                for c in view.query().page(store, "order0000001", offset, 7)
            ]
            assert paged == sort_cases(cases, column, reverse), (column, reverse)
