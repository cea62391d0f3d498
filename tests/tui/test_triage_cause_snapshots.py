"""Snapshots of Step 1's cause analysis and the Triage column, from stored triage states."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import press_before
from triage_store import RED_RUN, SUITE

from redline.deciding.cause import (
    ArmCounts,
    ArmKind,
    Bar,
    Change,
    ChangeItem,
    Diagnosis,
    explain,
)
from redline.deciding.reference import Reference
from redline.running.store import RunStore
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import TriageRecord
from redline_tui.app import TriageApp
from redline_tui.context import TriageContext

SIZE = (100, 30)
SnapCompare = Callable[..., bool]


def _prompt_regression() -> Diagnosis:
    """What a finished analysis of 0042 stores: two arms, decided after one batch."""
    model = "openai:fake-model-2026-01"
    diagnosis = Diagnosis(
        cause=Cause.PROMPT,
        sentence="",
        red_run=RED_RUN,
        suite=SUITE,
        case_id="0042-amount-suffix",
        reference=Reference(
            revision="5e1f0c2b9a7d4e3f8a6b1c0d2e4f6a8b0c1d3e5f",
            branch="main",
            date="2026-11-22T18:04:00+00:00",
            reason="the last run that passed this case (run c0ffee000003, 5/5, 2026-11-22 "
            "02:00 UTC) on a commit the red run's commit descends from",
        ),
        changes=(ChangeItem(Change.PROMPT, "user prompt template"),),
        arms=(
            ArmCounts(
                ArmKind.REFERENCE_PROMPT,
                f"reference prompt (5e1f0c2b9a7d) on {model}",
                model,
                "5e1f0c2b9a7d",
                10,
                10,
                "beef00000011",
            ),
            ArmCounts(
                ArmKind.RED,
                f"your configuration again (0123456789ab, {model})",
                model,
                "0123456789ab",
                1,
                10,
                "beef00000012",
            ),
        ),
        red=ArmCounts(ArmKind.RED, f"red run {RED_RUN}", model, "0123456789ab", 3, 5, RED_RUN),
        bar=Bar(5, 4),
        p_values={"reference-prompt": 0.000054},
        confidence=0.95,
        margin=0.15,
        budget=40,
    )
    return Diagnosis.from_json({**diagnosis.to_json(), "sentence": explain(diagnosis)})


def _app(tmp_path: Path, store: RunStore) -> TriageApp:
    root = tmp_path / "plain"
    root.mkdir()
    diagnosis = _prompt_regression()
    store.put_triage(
        TriageRecord(RED_RUN, SUITE, "0042-amount-suffix", "prompt", 1.0, diagnosis.to_json())
    )
    store.put_triage(TriageRecord(RED_RUN, SUITE, "0007-marginal-tone", "noise", 1.0))
    store.put_triage(TriageRecord(RED_RUN, SUITE, "0013-json-shape", "stopped", 0.4))
    store.put_triage(TriageRecord(RED_RUN, SUITE, "0031-escalation", "case-changed", 1.0))
    ctx = TriageContext(store=store, root=root, today=lambda: dt.date(2026, 11, 30), user="ana")
    return TriageApp(ctx)


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param((), id="home-triage-column-prompt-noise-stopped-changed"),
        pytest.param(("down", "enter"), id="step1-prompt-regression-two-arms"),
    ],
)
def test_cause_snapshot(
    snap_compare: SnapCompare, tmp_path: Path, fixed_store: RunStore, keys: tuple[str, ...]
) -> None:
    assert snap_compare(
        _app(tmp_path, fixed_store), terminal_size=SIZE, run_before=press_before(*keys)
    )
