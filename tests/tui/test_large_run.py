"""The Run screen on a merged night's size of run: its cases are read a page at a time,
the failures first, and every one of them stays reachable."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import settle
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Static

from redline.deciding.case_rows import CaseFilter, CaseView
from redline.running.exchange import export_run, import_run
from redline.vocabulary.records import CaseOutcome, CaseRecord
from redline.vocabulary.verdicts import Verdict
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext
from redline_tui.screens.run import RunScreen
from redline_tui.screens.search import SearchScreen
from redline_tui.widgets.case_table import CaseTable
from redline_tui.widgets.paged_table import HELD_PAGES, PAGE
from runfactory import CaseSpec, RunSpec, open_store, write_run

pytestmark = pytest.mark.anyio

CASES = 20_000
FAILING = [f"{i:05d}" for i in range(0, CASES, 97)]
#: The cases in the table's first order: failing first, then by id.
ORDER = FAILING + [f"{i:05d}" for i in range(CASES) if i % 97]


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


def _visible(table: CaseTable) -> list[str]:
    """The case names on the table's lines as they are drawn (under the header)."""
    lines = (table.render_line(y).text for y in range(1, table.size.height))
    return [m.group(0) for line in lines if (m := re.search(r"nightly/\d{5}", line))]


def _drawn_in_order(table: CaseTable) -> None:
    """What is on screen is the view's order from the scroll position, and the cursor's
    case is the one at its row."""
    top = round(table.scroll_y)
    drawn = _visible(table)
    assert drawn and drawn == [f"nightly/{c}" for c in ORDER[top : top + len(drawn)]]
    selected = table.selected_case()
    assert selected is not None and selected.case_id == ORDER[table.cursor_row]


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
        _drawn_in_order(table)

        await pilot.press("end")
        await settle(pilot)
        # The last case, on screen at the bottom, with the rows before it never read.
        assert len(screen.shown) <= HELD_PAGES * PAGE < CASES
        last = screen.selected_case()
        assert last is not None and last.case_id == "19999"
        assert table.cursor_row == CASES - 1
        assert table.get_row_at(table.cursor_row)[2].plain == "nightly/19999"
        assert table.row_count == CASES and table.scroll_y == table.max_scroll_y
        assert table.virtual_size.height == CASES + 1  # the scrollbar spans every case
        assert _visible(table)[-1] == "nightly/19999"
        _drawn_in_order(table)

        for _ in range(3):
            await pilot.press("pageup")
        await settle(pilot)
        _drawn_in_order(table)
        assert table.cursor_row < CASES - 3 * (table.size.height - 2)

        await pilot.press("home")
        await pilot.press("slash")
        screen.query_one("#case-filter", Input).value = "v:wrong"
        await settle(pilot)
        assert [c.case_id for c in screen.shown] == FAILING[:PAGE]  # the filter ran in SQL
        assert f"{len(FAILING)} of {CASES} cases" in _status(app)
        await pilot.press("enter", "end")
        await settle(pilot)
        assert _visible(table)[-1] == f"nightly/{FAILING[-1]}"


async def test_sorting_a_large_run_keeps_the_highlighted_case_under_the_cursor(
    tmp_path: Path,
) -> None:
    app = TriageApp(_large_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        table = screen.table
        for _ in range(30):
            await pilot.press("pagedown")
        await settle(pilot)
        before = table.selected_case()
        assert before is not None
        await pilot.press("s")  # by case: the ids in order
        await settle(pilot)
        assert screen.sort_column == "case"
        after = table.selected_case()
        assert after == before and table.cursor_row == int(before.case_id)
        assert _visible(table)  # scrolled to it
        assert f"nightly/{before.case_id}" in _visible(table)


_RANK = {CaseOutcome.FAIL: 0, CaseOutcome.INCONCLUSIVE: 1, CaseOutcome.MARGINAL: 2}


def _rate(c: CaseRecord) -> float:
    return c.passes / c.samples if c.samples else 0.0


def _outcome(c: CaseRecord) -> tuple[object, ...]:
    return (_RANK.get(c.result, 3), _rate(c), c.suite, c.case_id)


#: What each sort column means, as a person reads the table: failing first, ties by pass
#: rate, then suite and id.
_ORDERS: dict[str, Callable[[CaseRecord], tuple[object, ...]]] = {
    "outcome": _outcome,
    "case": lambda c: (c.suite, c.case_id),
    "tier": lambda c: (c.tier, *_outcome(c)),
    "passes": lambda c: (_rate(c), c.passes, c.suite, c.case_id),
    "required": lambda c: (c.required, *_outcome(c)),
}


def test_the_store_pages_a_view_in_the_order_and_filter_the_table_shows(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    specs = [
        CaseSpec(
            f"c{i:03d}" + ("-Ärger" if i % 5 == 0 else ""),
            [Verdict.OK if (i * 7 + k) % 3 else Verdict.WRONG for k in range(i % 4 + 1)],
            suite=f"suite-{i % 3}",
            tier=("quality", "contract")[i % 2],
        )
        for i in range(60)
    ]
    write_run(store, RunSpec("order0000001", specs, manifest={}))
    cases = store.cases("order0000001")
    assert {c.result for c in cases} >= {CaseOutcome.FAIL, CaseOutcome.PASS}
    for column, order in _ORDERS.items():
        for reverse in (False, True):
            view = CaseView(sort_column=column, reverse=reverse)
            paged = [
                c
                for offset in range(0, len(cases), 7)
                for c in view.query().page(store, "order0000001", offset, 7)
            ]
            assert paged == sorted(cases, key=order, reverse=reverse), (column, reverse)
            # Knowing the total, pages past the middle are read from the end: the same rows.
            total = len(cases)
            from_end = [
                c
                for offset in range(0, total + 7, 7)
                for c in view.query().page(store, "order0000001", offset, 7, total)
            ]
            assert from_end == paged, (column, reverse)
            for case in cases[::13]:
                position = view.query().position(store, "order0000001", case.suite, case.case_id)
                assert position == paged.index(case), (column, reverse)
    ärger = CaseView(case_filter=CaseFilter.parse("äRGER v:wrong")).query()
    expected = [
        c
        for c in cases
        if "ärger" in f"{c.suite}/{c.case_id}".lower() and c.verdicts[Verdict.WRONG]
    ]
    assert expected and ärger.page(store, "order0000001", 0) == sorted(expected, key=_outcome)
    assert ärger.count(store, "order0000001") == len(expected)
    left_out = next(c for c in cases if c not in expected)
    assert ärger.position(store, "order0000001", left_out.suite, left_out.case_id) is None


async def test_search_finds_a_case_of_a_large_imported_run(tmp_path: Path) -> None:
    """A merged night is imported without its search index: the app's search finds a
    case in it at once (the samples not indexed are scanned), and the app indexes the run
    a part at a time while it is open."""
    cases = 8_000
    specs = [
        CaseSpec(
            f"{i:05d}",
            [Verdict.OK],
            suite="nightly",
            outputs=[f"The refund for order {i} is on its way."],
        )
        for i in range(cases)
    ]
    with open_store(tmp_path / "shard") as shard:
        write_run(shard, RunSpec("imported0001", specs, manifest={}))
        export_run(shard, "imported0001", tmp_path / "export")
    store = open_store(tmp_path)
    run = import_run(store, tmp_path / "export")
    app = TriageApp(TriageContext(store=store, root=tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("F")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"ORDER 6543 is", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert [(h.case_id, h.found_in) for h in screen.hits] == [("06543", "output")]
        cell = screen.query_one("#search-hits", DataTable).get_cell_at(Coordinate(0, 4))
        assert "order 6543 is on its way" in str(cell)
    assert store.index_for_search(run.id, most=0)  # the app indexed all of it meanwhile
