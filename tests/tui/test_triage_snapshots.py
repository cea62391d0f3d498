"""Snapshot tests of every screen at 100×30 on the fixed store (no clock, no randomness)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import fill, settle
from textual.pilot import Pilot
from triage_repo import TriageRepo
from triage_store import EARLIER_RUNS

from redline.baseline import save_baselines
from redline.store import RunStore
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext

SIZE = (100, 30)
SnapCompare = Callable[..., bool]


def _plain_app(tmp_path: Path, store: RunStore) -> TriageApp:
    """No config and no git repository: what the screens show must not depend on either."""
    root = tmp_path / "plain"
    root.mkdir()
    ctx = TriageContext(store=store, root=root, today=lambda: dt.date(2026, 11, 30), user="ana")
    save_baselines(store, EARLIER_RUNS[-1], ctx.baseline_dir)
    return TriageApp(ctx)


def _keys(*keys: str) -> Callable[[Pilot[None]], object]:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("run", ()),
        ("rerun", ("down", "enter")),
        ("outputs", ("down", "2", "j", "j")),
        ("history", ("3",)),
        ("compare", ("c",)),
        ("help", ("question_mark",)),
        ("filtered", ("v", "v")),
    ],
)
def test_screen_snapshot(
    snap_compare: SnapCompare,
    tmp_path: Path,
    fixed_store: RunStore,
    name: str,
    keys: tuple[str, ...],
) -> None:
    app = _plain_app(tmp_path, fixed_store)
    assert snap_compare(app, terminal_size=SIZE, run_before=_keys(*keys))


def test_confirm_dialog_snapshot(snap_compare: SnapCompare, triage_repo: TriageRepo) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()
        await fill(pilot, "samples", "20")
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(TriageApp(triage_repo.ctx), terminal_size=SIZE, run_before=run_before)
