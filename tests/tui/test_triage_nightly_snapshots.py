"""Snapshots of a nightly of 200 cases: groups, one group as the table, search, quarantine.

Each id says what the snapshot shows. The store, dates and user are fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import press_before
from nightly_store import NIGHTLY, nightly_context

from redline_tui.app import TriageApp

SnapCompare = Callable[..., bool]
SIZE = (120, 36)

SCREENS = {
    "home-five-failure-groups-with-trend-counts": ("f",),
    "home-one-group-as-table-with-trend-marks": ("f", "down", "enter"),
    "home-quarantined-case-passing-again": ("G",),
    "search-phrase-across-all-outputs": ("F", *"here is the json", "enter"),
    "quarantine-form-for-a-case": ("f", "down", "enter", "Q"),
}


@pytest.fixture
def nightly_app(tmp_path: Path) -> Iterator[TriageApp]:
    ctx = nightly_context(tmp_path / "repo")
    yield TriageApp(ctx, NIGHTLY)
    ctx.store.close()


@pytest.mark.parametrize("screen", SCREENS)
def test_nightly_snapshot(snap_compare: SnapCompare, nightly_app: TriageApp, screen: str) -> None:
    assert snap_compare(nightly_app, terminal_size=SIZE, run_before=press_before(*SCREENS[screen]))
