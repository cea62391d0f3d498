"""Pilot tests of the case actions: the files and the git index afterwards."""

from __future__ import annotations

import json

import pytest
from helpers import fill, settle
from textual.widgets import Input, Label, Static
from triage_repo import CASE_TEXT, TriageRepo
from triage_store import EARLIER_RUNS, RED_RUN, RERUN, add_interrupted_rerun

from redline.deciding.baseline import save_baselines
from redline_tui.app import TriageApp
from redline_tui.widgets.dialogs import ConfirmDialog, FormDialog, MessageDialog, PickerDialog
from redline_tui.widgets.lazy_text import LazyText

pytestmark = pytest.mark.anyio

CASE_REL = "cases/support/0042-amount-suffix.yaml"


async def _open_case_outputs(pilot: object, app: TriageApp) -> None:
    await settle(pilot)  # type: ignore[arg-type]
    await pilot.press("down", "2")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


def _message(app: TriageApp) -> str:
    assert isinstance(app.screen, MessageDialog)
    return str(app.screen.query_one("#message-body", Static).render())


async def test_raise_samples_keeps_comments_scales_required_and_stages_alone(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        await fill(pilot, "samples", "20")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        diff = app.screen.query_one(LazyText).lines
        assert "-samples: 5" in diff and "+samples: 20" in diff
        assert "-required: 4" in diff and "+required: 16" in diff
        await pilot.press("y")
        await pilot.pause()
        assert "git commit -m 'redline: raise samples of case 0042-amount-suffix" in _message(app)
    expected = CASE_TEXT.replace("samples: 5", "samples: 20").replace("required: 4", "required: 16")
    assert triage_repo.case_path.read_text(encoding="utf-8") == expected
    assert triage_repo.staged() == [CASE_REL]
    assert triage_repo.repo.head.commit.message == "reword the refund prompt"


async def test_retire_moves_the_case_with_reason_and_stages_the_move(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("enter")  # empty reason: refused, dialog stays
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        await fill(pilot, "reason", "sat at 4/5 for weeks; the amount format is tested elsewhere")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert "Staged alone" in _message(app)
    retired = triage_repo.root / "cases/support/retired/0042-amount-suffix.yaml"
    assert not triage_repo.case_path.exists()
    text = retired.read_text(encoding="utf-8")
    assert text.startswith(CASE_TEXT)
    assert text.endswith(
        "retired:\n  date: 2026-11-30\n  reason: sat at 4/5 for weeks; the amount format is "
        "tested elsewhere\n  by: ana\n"
    )
    assert triage_repo.staged() == [CASE_REL, "cases/support/retired/0042-amount-suffix.yaml"]


async def test_loosening_is_refused_while_the_index_holds_a_prompt_change(
    triage_repo: TriageRepo,
) -> None:
    triage_repo.stage("cases/support/prompts/user.md", "MODE:echo Refund {{name}}: 12,000.")
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, PickerDialog)
        assert app.screen.picked == 0  # the assertion that failed most
        assert app.screen.query_one("#field-value", Input).value == "12,000"
        await fill(pilot, "value", "12")
        await fill(pilot, "reason", "the amount may be written 12.000 too")
        await pilot.press("enter")
        await pilot.pause()
        message = _message(app)
        title = str(app.screen.query_one(".dialog-title", Static).render())
        assert title == "Refused: the index holds a prompt change"
    assert "contains" in message and "prompt" in message
    assert "cases/support/prompts/user.md" in message
    assert triage_repo.case_path.read_text(encoding="utf-8") == CASE_TEXT
    assert triage_repo.staged() == ["cases/support/prompts/user.md"]


async def test_loosening_one_assertion_writes_the_reason_beside_it(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("l")
        await pilot.pause()
        await pilot.press("down")  # the list shows each assertion with its current value
        await pilot.pause()
        assert isinstance(app.screen, PickerDialog)
        assert app.screen.query_one("#field-value", Input).value == "400"
        assert "a whole number" in str(app.screen.query_one("#label-value", Label).render())
        await fill(pilot, "value", "eight hundred")
        await fill(pilot, "reason", "refund answers list every fee")
        await pilot.press("enter")  # not a number: refused in the dialog
        await pilot.pause()
        assert isinstance(app.screen, PickerDialog)
        assert "not a whole number" in str(app.screen.query_one("#form-error", Static).render())
        await fill(pilot, "value", "800")
        await fill(pilot, "reason", "")
        await pilot.press("enter")  # no reason yet: refused
        await pilot.pause()
        assert isinstance(app.screen, PickerDialog)
        await fill(pilot, "reason", "refund answers list every fee")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        footer = str(app.screen.query_one("#confirm-footer", Static).render())
        assert "Loosens: case 0042-amount-suffix: assert[1] max-chars 400 → 800" in footer
        await pilot.press("y")
        await pilot.pause()
        message = _message(app)
        assert "value 400 → 800: refund answers list every fee" in message
        assert "{" not in message and "None" not in message
    text = triage_repo.case_path.read_text(encoding="utf-8")
    assert text == CASE_TEXT.replace(
        "    value: 400\n",
        "    value: 800\n    note: 'loosened 2026-11-30 (value 400 → 800): refund answers list "
        "every fee'\n",
    )
    assert triage_repo.staged() == [CASE_REL]


async def test_accept_offers_the_latest_finished_rerun_not_an_interrupted_one(
    triage_repo: TriageRepo,
) -> None:
    """A rerun cancelled after 4 samples cannot be accepted: it is not the default either."""
    add_interrupted_rerun(triage_repo.ctx.store)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        assert app.screen.query_one("#field-run").value == RERUN  # type: ignore[attr-defined]


async def test_accept_rerun_as_baseline_for_the_case(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        assert app.screen.query_one("#field-run").value == RERUN  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert "accept baseline for case 0042-amount-suffix" in _message(app)
    baseline = json.loads((triage_repo.root / "baselines/support.json").read_text("utf-8"))
    entry = baseline["cases"]["0042-amount-suffix"]
    assert (entry["passes"], entry["samples"], entry["run_id"]) == (9, 20, RERUN)
    assert triage_repo.staged() == ["baselines/support.json"]


async def test_cancelling_the_confirmation_writes_nothing(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("m")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDialog)
    assert triage_repo.case_path.read_text(encoding="utf-8") == CASE_TEXT
    assert triage_repo.staged() == []


async def test_loosening_a_string_keeps_it_a_string_whatever_it_holds(
    triage_repo: TriageRepo,
) -> None:
    """`Here is the JSON:` is text, never YAML's mapping `{Here is the JSON: null}`."""
    triage_repo.case_path.write_text(
        CASE_TEXT + "  - type: not-contains\n    value: Here is\n", encoding="utf-8"
    )
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, PickerDialog)
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.screen.query_one("#field-value", Input).value == "Here is"
        await fill(pilot, "value", "Here is the JSON:")
        await fill(pilot, "reason", "only the full preamble is the bug")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        footer = str(app.screen.query_one("#confirm-footer", Static).render())
        assert '"Here is" → "Here is the JSON:"' in footer
        assert "{" not in footer and "None" not in footer
        await pilot.press("y")
        await pilot.pause()
    from redline.suite.cases import load_suite

    suite = load_suite(triage_repo.case_path.parent, triage_repo.ctx.config)
    case = suite.case("0042-amount-suffix")
    assert "value: 'Here is the JSON:'" in triage_repo.case_path.read_text(encoding="utf-8")
    assert len(case.assertions) == 3
    assert triage_repo.staged() == [CASE_REL]


async def test_an_edit_the_loader_rejects_is_never_written_or_staged(
    triage_repo: TriageRepo,
) -> None:
    """A regex that does not compile is refused with the loader's own words."""
    triage_repo.case_path.write_text(
        CASE_TEXT + "  - type: regex\n    value: 'IDR [0-9]+'\n", encoding="utf-8"
    )
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("l")
        await pilot.pause()
        await pilot.press("down", "down")
        await fill(pilot, "value", "IDR ([0-9]+")
        await fill(pilot, "reason", "amounts may have separators")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, MessageDialog)
        title = str(app.screen.query_one(".dialog-title", Static).render())
        assert title == "Refused: the edited case file would not load"
        assert "0042-amount-suffix.yaml:" in _message(app)
    assert "IDR [0-9]+" in triage_repo.case_path.read_text(encoding="utf-8")
    assert triage_repo.staged() == []


async def test_accepting_a_lower_baseline_warns_with_numbers_and_keeps_the_reason(
    triage_repo: TriageRepo,
) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[-1], triage_repo.ctx.baseline_dir)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        await fill(pilot, "run", RED_RUN)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        note = str(app.screen.query_one(".dialog-note", Static).render())
        assert "lowers the accepted pass count: 5/5 (100%) → 3/5 (60%)" in note
        await pilot.press("enter")  # a reason is required now
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        await fill(pilot, "reason", "the new wording is right, the bar moves")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert "5/5 → 3/5" in _message(app)
        assert "the new wording is right, the bar moves" in _message(app)
    baseline = json.loads((triage_repo.root / "baselines/support.json").read_text("utf-8"))
    assert baseline["cases"]["0042-amount-suffix"]["reason"] == (
        "the new wording is right, the bar moves"
    )


async def test_accepting_a_run_of_another_model_warns(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_case_outputs(pilot, app)
        await pilot.press("a")
        await pilot.pause()
        await fill(pilot, "run", EARLIER_RUNS[0])
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FormDialog)
        note = str(app.screen.query_one(".dialog-note", Static).render())
        assert (
            "comes from model openai:fake-model-2025-12, not the suite's pinned model "
            "openai:fake-model-2026-01" in note
        )
        await pilot.press("escape")
        await pilot.pause()
    assert not (triage_repo.root / "baselines/support.json").exists()
