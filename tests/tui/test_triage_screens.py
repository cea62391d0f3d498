"""Pilot tests of the triage screens: what a person sees and can reach by keyboard."""

from __future__ import annotations

import json

import pytest
from helpers import fill, screen_text, settle
from textual.widgets import DataTable, Static
from triage_repo import TriageRepo
from triage_store import (
    EARLIER_RUNS,
    HOSTILE_OUTPUT,
    PARTIAL_RERUN,
    RED_RUN,
    RERUN,
    _run_record,
    add_interrupted_rerun,
)

from redline.baseline import save_baselines
from redline.history import HistoryPoint
from redline.records import CaseOutcome, RunKind
from redline_tui.app import TriageApp
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.help import HelpScreen
from redline_tui.screens.history import HistoryScreen, point_line
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.run import RunScreen, header_text
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.lazy_text import LazyText
from redline_tui.widgets.verdict_bar import VerdictBar

pytestmark = pytest.mark.anyio


def _static_text(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_run_screen_shows_failing_cases_first_with_counts(triage_repo: TriageRepo) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[-1], triage_repo.ctx.baseline_dir)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert screen.run is not None and screen.run.id == RED_RUN
        ids = [c.case_id for c in screen.shown]
        assert ids[:3] == ["0007-marginal-tone", "0042-amount-suffix", "0013-json-shape"]
        counts = screen.query_one(VerdictBar).counts
        assert counts["wrong"] == 4 and counts["malformed"] == 1 and counts["truncated"] == 1
        header = _static_text(app, "#run-header")
        assert "c0ffee000004" in header and "openai:fake-model-2026-01" in header
        assert "RED" in header
        assert not screen.query_one("#noise-banner").display
        table = screen.query_one("#cases", DataTable)
        assert str(table.get_cell("support/0031-escalation", "marks")) == "changed"
        assert "changed" not in str(table.get_cell("support/0042-amount-suffix", "marks"))


async def test_filter_by_text_and_verdict_and_sort(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await pilot.press("slash", *"0042")
        assert [c.case_id for c in screen.shown] == ["0042-amount-suffix"]
        await pilot.press("escape")
        assert len(screen.shown) == 9
        await pilot.press("v", "v")
        assert screen.case_filter.verdict == "wrong"
        assert {c.case_id for c in screen.shown} == {"0042-amount-suffix", "0007-marginal-tone"}
        await pilot.press("v")
        assert [c.case_id for c in screen.shown] == ["0013-json-shape"]
        await pilot.press("escape", "slash", *"v:malf", "enter")
        assert screen.case_filter.verdict == "malformed"
        assert [c.case_id for c in screen.shown] == ["0013-json-shape"]
        await pilot.press("escape", "slash", *"V:Wrong 0042", "enter")
        assert [c.case_id for c in screen.shown] == ["0042-amount-suffix"]
        assert "verdict wrong" in screen.case_filter.describe()
        await pilot.press("escape", "s")
        assert screen.sort_column == "case"
        assert next(c.case_id for c in screen.shown) == "0007-marginal-tone"
        assert [c.case_id for c in screen.shown][-1] == "0051-short-answer"


async def test_no_comparison_banner_on_a_single_run_with_few_cases(
    triage_repo: TriageRepo,
) -> None:
    """Nothing is compared on a run's home screen: too few cases is no reason for a banner."""
    app = TriageApp(triage_repo.ctx, RERUN)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#noise-banner", Static).display
        assert "withheld" not in screen_text(app)


async def test_steps_by_number_and_escape_returns_home(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down")  # 0042-amount-suffix
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RerunScreen)
        footer = app.screen.query_one(KeyBar).render()
        assert footer.plain.startswith(" r  Run rerun  x  Cancel rerun ")
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)
        footer = app.screen.query_one(KeyBar).render()
        assert footer.plain.startswith(" o  Raw output  d  Diff  w  Wrap  esc  Back ")
        assert "?  Help" in footer.plain and "q  Quit" in footer.plain
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert ("c", "Compare") in app.screen.rows
        assert ("/", "Filter") in app.screen.rows
        assert ("?", "This help") in app.screen.rows
        assert [text for key, text in app.screen.rows if key == "escape"] == ["Clear filter"]


async def test_outputs_lists_red_run_and_rerun_samples(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        labels = [label for label, _ in screen.samples]
        assert labels.count("red run") == 5
        assert labels.count("rerun beef00") == 20
        await pilot.press("j", "j", "j")
        reasons = _static_text(app, "#sample-reasons")
        assert "assert[0] contains: '12,000' not found in the output" in reasons


async def test_raw_output_with_ansi_markup_and_nul_displays_literally(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("j", "j")
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        sample = screen.selected_sample()
        assert sample is not None and sample.output == HOSTILE_OUTPUT
        raw = screen.query_one("#raw-output", LazyText)
        expected = "Total: \\x1b[31m12k\\x1b[0m [bold]not bold[/bold] NUL:\\x00 end"
        assert raw.lines == [expected]
        shown = "".join(seg.text for seg in raw.render_line(0)).rstrip()
        assert expected.startswith(shown)
        assert "\\x1b[31m12k" in shown and "[bold]not bold" in shown
        assert "\x1b" not in shown and "\x00" not in shown


async def test_diff_to_golden_colours_added_and_removed_lines(triage_repo: TriageRepo) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[0], triage_repo.ctx.baseline_dir)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("j", "j", "j")  # sample 3: wrong
        diff = app.screen.query_one("#golden-diff", LazyText)
        assert "-Your refund of 12,000 IDR was approved." in diff.lines
        assert "+Your refund of 12k was approved." in diff.lines
        assert "added" in diff.kinds and "removed" in diff.kinds and "hunk" in diff.kinds


async def test_outputs_say_why_there_is_no_golden_output(triage_repo: TriageRepo) -> None:
    """A baseline accepted from a run where the case never passed has no golden output."""
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        text = " ".join(app.screen.query_one("#golden-diff", LazyText).lines)
        assert text == "No golden output: no accepted baseline for this case yet (a accepts one)."
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[0], triage_repo.ctx.baseline_dir)
    path = triage_repo.ctx.baseline_dir / "support.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"]["0042-amount-suffix"].update(golden=None, passes=0)
    path.write_text(json.dumps(data), encoding="utf-8")
    triage_repo.ctx.forget_baselines()
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        text = " ".join(app.screen.query_one("#golden-diff", LazyText).lines)
        assert "no accepted baseline" not in text
        assert text == (
            f"No golden output: the accepted baseline (run {EARLIER_RUNS[0]}, 0/5 passed) "
            "has no passing sample to keep (a accepts a newer run)."
        )


async def test_one_megabyte_output_scrolls_in_the_lazy_viewer(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        raw = app.screen.query_one("#raw-output", LazyText)
        raw.set_lines(["x" * 1_000_000, *(f"line {i}" for i in range(20_000))])
        raw.focus()
        await pilot.press("end", "pagedown", "right")
        await pilot.pause()
        assert raw.virtual_size.width == 1_000_000
        assert raw.virtual_size.height == 20_001


async def test_history_bars_reruns_and_marginal_analysis(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        bars = _static_text(app, "#history-bars").splitlines()
        assert len(bars) == 5
        assert "↳rerun" in bars[-1] and RERUN in bars[-1]
        assert bars[3].startswith("▶") and "3/5" in bars[3] and "fail" in bars[3]
        assert screen.history.reruns[0].run_id == RERUN


async def test_history_marks_model_change_and_marginal_case(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # 0007-marginal-tone: 4,3,4,3 of 5 with 4 required
        await settle(pilot)
        bars = _static_text(app, "#history-bars").splitlines()
        assert bars[2].endswith("▲ model")
        assert "▲" not in bars[1] and "▲" not in bars[3]
        notes = _static_text(app, "#marginal").splitlines()
        assert notes[0] == (
            "▲ c0ffee000003: model openai:fake-model-2025-12 → openai:fake-model-2026-01"
        )
        assert notes[1].startswith("Marginal: within one sample of its bar for 4 consecutive")


async def test_compare_screen_sorted_by_largest_drop_and_opens_both_outputs(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.comparison is not None
        assert screen.comparison.a.run.id == EARLIER_RUNS[-1]
        ids = [d.case_id for d in screen.rows]
        assert ids[0] == "0042-amount-suffix"
        assert "0031-escalation" not in ids
        assert "1 case(s) changed" in _static_text(app, "#compare-header")
        await pilot.press("enter")
        await settle(pilot)
        outputs = app.screen
        assert isinstance(outputs, OutputsScreen)
        labels = {label for label, _ in outputs.samples}
        assert labels == {"A c0ffee", "B c0ffee"}
        assert len(outputs.samples) == 10


async def test_works_at_80_by_24(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#cases", DataTable)
        assert table.size.height >= 5
        await pilot.press("down", "2")
        await settle(pilot)
        raw = app.screen.query_one("#raw-output", LazyText)
        assert raw.size.height >= 3 and raw.size.width >= 20


async def test_command_palette_offers_the_screen_actions(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Compare", "Filter", "Retire", "Loosen", "Help"} <= titles
        compare = next(c for c in app.get_system_commands(app.screen) if c.title == "Compare")
        await compare.callback()
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)


async def test_compare_two_chosen_runs_across_a_model_change(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        await fill(pilot, "a", EARLIER_RUNS[0])
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        assert screen.comparison.a.run.id == EARLIER_RUNS[0]
        header = _static_text(app, "#compare-header")
        assert "A c0ffee000001  openai:fake-model-2025-12" in header
        assert "B c0ffee000004  openai:fake-model-2026-01" in header


def test_run_header_fits_80_columns_with_a_local_model_digest() -> None:
    """The embedded model's id carries a 64-hex digest: the header cuts it, not the screen."""
    digest = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    model = f"local:smollm2-135m-instruct-q4_1@sha256:{digest}"
    lines = header_text(_run_record(RED_RUN, 30, model=model)).plain.splitlines()
    assert lines[1] == "model local:smollm2-135m-instruct-q4_1@sha256:b179c9523d0e"
    assert digest not in "".join(lines)
    assert len(lines) == 4 and max(len(line) for line in lines[1:]) <= 78


@pytest.mark.parametrize(
    ("passes", "samples", "required", "bar"),
    [
        (3, 3, 3, "████████████████████│"),
        (0, 3, 3, "░░░░░░░░░░░░░░░░░░░░│"),
        (3, 5, 4, "████████████░░░░│░░░░"),
        (5, 5, 4, "████████████████│████"),
    ],
)
def test_history_bar_marks_the_required_count_even_when_every_sample_is_required(
    passes: int, samples: int, required: int, bar: str
) -> None:
    point = HistoryPoint(
        run_id=RED_RUN,
        kind=RunKind.RUN,
        parent_id=None,
        started_at="2026-11-30T02:00:00.000+00:00",
        model_id="openai:fake-model-2026-01",
        samples=samples,
        passes=passes,
        required=required,
        result=CaseOutcome.PASS if passes >= required else CaseOutcome.FAIL,
        case_hash="h",
        content_samples=samples,
    )
    assert f" {bar} " in point_line(point, RED_RUN).plain


async def test_rerun_screen_says_when_the_latest_rerun_was_cancelled(
    triage_repo: TriageRepo,
) -> None:
    add_interrupted_rerun(triage_repo.ctx.store)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, RerunScreen)
        note = _static_text(app, "#rerun-progress")
        assert note == (
            f"Showing the latest rerun {PARTIAL_RERUN} (2026-11-25 02:00, interrupted after "
            "4 sample(s)); r runs again."
        )
