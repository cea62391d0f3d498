"""Snapshot tests of every screen and dialog at 80×24 and 140×40 on the fixed store.

Each id says what the snapshot shows and at which size: `run-home-red-run@80x24`.
No clock and no randomness: the store, the dates and the user are fixed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import fill, press_before, settle
from textual.pilot import Pilot
from triage_repo import TriageRepo
from triage_store import EARLIER_RUNS, RED_RUN

from redline.deciding.baseline import save_baselines
from redline.running.store import RunStore
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext

SIZES = {"80x24": (80, 24), "140x40": (140, 40)}
SnapCompare = Callable[..., bool]


def _plain_app(tmp_path: Path, store: RunStore) -> TriageApp:
    """No config and no git repository: what the screens show must not depend on either."""
    root = tmp_path / "plain"
    root.mkdir()
    ctx = TriageContext(store=store, root=root, today=lambda: dt.date(2026, 11, 30), user="ana")
    save_baselines(store, EARLIER_RUNS[-1], ctx.baseline_dir)
    return TriageApp(ctx)


#: (what the snapshot shows, keys pressed from the home screen).
SCREENS = {
    "run-home-red-run": (),
    "run-filtered-to-wrong-verdicts": ("v", "v"),
    "run-filter-box-typing-a-case-number": ("slash", "0", "0", "4"),
    "runs-screen-recent-runs": ("R",),
    "rerun-step1-tabs-and-form": ("down", "enter"),
    "outputs-step2-wrapped-diff-with-changed-words": ("down", "2", "j", "j", "j"),
    "outputs-step2-hostile-output-escaped": ("down", "2", "j", "j"),
    "outputs-step2-wrapping-off": ("down", "2", "j", "j", "j", "w"),
    "history-step3-rate-chart-with-intervals": ("3",),
    "compare-summary-and-changed-cases": ("c",),
    "compare-run-picker-for-run-a": ("c", "a"),
    "help-run-screen-filter-language": ("question_mark",),
    "help-outputs-step": ("down", "2", "question_mark"),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"@{s}")
@pytest.mark.parametrize("screen", SCREENS)
def test_screen_snapshot(
    snap_compare: SnapCompare,
    tmp_path: Path,
    fixed_store: RunStore,
    screen: str,
    size: str,
) -> None:
    app = _plain_app(tmp_path, fixed_store)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=press_before(*SCREENS[screen]))


async def _open_outputs(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("down", "2")
    await settle(pilot)


async def _raise_samples_confirm(pilot: Pilot[None]) -> None:
    await _open_outputs(pilot)
    await pilot.press("m")
    await pilot.pause()
    await fill(pilot, "samples", "20")
    await pilot.press("enter")
    await pilot.pause()


async def _loosen_picker(pilot: Pilot[None]) -> None:
    await _open_outputs(pilot)
    await pilot.press("l")
    await pilot.pause()
    await pilot.press("down")
    await pilot.pause()


async def _loosen_not_a_number(pilot: Pilot[None]) -> None:
    await _loosen_picker(pilot)
    await fill(pilot, "value", "eight hundred")
    await fill(pilot, "reason", "refund answers list every fee")
    await pilot.press("enter")
    await pilot.pause()


async def _accept_lower_baseline(pilot: Pilot[None]) -> None:
    await _open_outputs(pilot)
    await pilot.press("a")
    await pilot.pause()
    await fill(pilot, "run", RED_RUN)
    await pilot.press("enter")
    await pilot.pause()


DIALOGS = {
    "confirm-raise-samples-diff": _raise_samples_confirm,
    "loosen-assertion-picker-with-current-values": _loosen_picker,
    "loosen-refuses-a-non-number": _loosen_not_a_number,
    "accept-baseline-lower-pass-count-asks-a-reason": _accept_lower_baseline,
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"@{s}")
@pytest.mark.parametrize("dialog", DIALOGS)
def test_dialog_snapshot(
    snap_compare: SnapCompare, triage_repo: TriageRepo, dialog: str, size: str
) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[-1], triage_repo.ctx.baseline_dir)
    assert snap_compare(
        TriageApp(triage_repo.ctx), terminal_size=SIZES[size], run_before=DIALOGS[dialog]
    )
