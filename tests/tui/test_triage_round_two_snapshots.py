"""Snapshots of the second round's fixes at 80×24 and 140×40; each id says what it shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from helpers import fill, press_before, settle
from test_triage_cause_snapshots import _prompt_regression
from test_triage_round_two import _comparison_run
from textual.pilot import Pilot
from triage_repo import TriageRepo
from triage_store import EARLIER_RUNS, RED_RUN, SUITE

from redline.deciding.baseline import save_baselines
from redline.running.store import RunStore
from redline.vocabulary.records import TriageRecord
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext

SIZES = {"80x24": (80, 24), "140x40": (140, 40)}
SnapCompare = Callable[..., bool]
Before = Callable[[Pilot[None]], Awaitable[None]]


def _plain_app(tmp_path: Path, store: RunStore, run_id: str | None = None) -> TriageApp:
    root = tmp_path / "plain"
    root.mkdir()
    ctx = TriageContext(store=store, root=root, today=lambda: dt.date(2026, 11, 30), user="ana")
    save_baselines(store, EARLIER_RUNS[-1], ctx.baseline_dir)
    return TriageApp(ctx, run_id)


async def _search_then_type(pilot: Pilot[None]) -> None:
    await press_before("F", *"12k", "enter")(pilot)
    await pilot.press(*"approv")
    await settle(pilot)


async def _step1_scrolled_to_the_conclusion(pilot: Pilot[None]) -> None:
    await press_before("down", "enter", "end")(pilot)


async def _more_samples_dialog(pilot: Pilot[None]) -> None:
    await press_before("down", "2", "m")(pilot)
    await fill(pilot, "samples", "20")


async def _compare_only_b_fails(pilot: Pilot[None]) -> None:
    await press_before("c", "f", "s", "s", "s", "s", "r")(pilot)


SCREENS: dict[str, Before] = {
    "search-typing-after-results-goes-to-the-query-box": _search_then_type,
    "step1-conclusion-and-p-values-scrolled-into-view": _step1_scrolled_to_the_conclusion,
    "compare-only-b-fails-listed-sorted-by-delta-descending": _compare_only_b_fails,
    "runs-picker-marks-a-comparison-run": press_before("R"),
    "home-header-of-a-comparison-run-with-its-branch": press_before(),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"@{s}")
@pytest.mark.parametrize("screen", SCREENS)
def test_round_two_snapshot(
    snap_compare: SnapCompare, tmp_path: Path, fixed_store: RunStore, screen: str, size: str
) -> None:
    diagnosis = _prompt_regression()
    fixed_store.put_triage(
        TriageRecord(RED_RUN, SUITE, "0042-amount-suffix", "prompt", 1.0, diagnosis.to_json())
    )
    candidate = _comparison_run(fixed_store)
    run_id = candidate if "comparison-run" in screen else RED_RUN
    app = _plain_app(tmp_path, fixed_store, run_id)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=SCREENS[screen])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"@{s}")
def test_more_samples_dialog_says_the_bar_it_keeps_snapshot(
    snap_compare: SnapCompare, triage_repo: TriageRepo, size: str
) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[-1], triage_repo.ctx.baseline_dir)
    assert snap_compare(
        TriageApp(triage_repo.ctx), terminal_size=SIZES[size], run_before=_more_samples_dialog
    )
