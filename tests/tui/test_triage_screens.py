"""Pilot tests of the triage screens: what a person sees and can reach by keyboard."""

from __future__ import annotations

import json

import pytest
from helpers import screen_text, settle
from textual.strip import Strip
from textual.widgets import DataTable, Static
from triage_repo import TriageRepo
from triage_store import (
    EARLIER_RUNS,
    HOSTILE_OUTPUT,
    RED_RUN,
    RERUN,
    _run_record,
)

from redline.deciding.baseline import save_baselines
from redline.deciding.history import HistoryPoint
from redline.vocabulary.records import CaseOutcome, RunKind
from redline_tui.app import TriageApp
from redline_tui.screens.compare import CompareScreen
from redline_tui.screens.help import HelpScreen
from redline_tui.screens.history import HistoryScreen, rate_chart
from redline_tui.screens.outputs import OutputsScreen
from redline_tui.screens.rerun import RerunScreen
from redline_tui.screens.run import RunScreen
from redline_tui.screens.runs import RunsScreen
from redline_tui.widgets.key_bar import KeyBar
from redline_tui.widgets.lazy_text import LazyText
from redline_tui.widgets.run_summary import header_text
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
        assert footer.plain.startswith(" r  Find the cause  x  Stop ")
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
        assert ("c", "Compare this run with an earlier one") in app.screen.rows
        assert ("/", "Filter the cases (language below)") in app.screen.rows
        assert ("?", "This help") in app.screen.rows
        assert ("g  Home", "First row") in app.screen.rows
        guide = app.screen.guide
        assert "v:VERDICT" in guide and "/invoice v:malf" in guide
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
        rows = ["".join(seg.text for seg in raw.render_line(y)) for y in range(raw.row_count)]
        shown = "".join(row.rstrip("\N{NO-BREAK SPACE} ") + " " for row in rows)
        assert shown.split() == expected.split()  # wrapped at spaces, nothing lost
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
        assert text.startswith("No golden output: there is no accepted baseline for this case")
        assert "golden: file://fixtures/" in text
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
        assert text.startswith(
            f"No golden output: the accepted baseline (run {EARLIER_RUNS[0]}, 0/5 passed) "
            "has no passing sample to keep, and the case has no `golden:` reference answer."
        )


async def test_a_case_s_own_golden_answer_is_diffed_when_the_baseline_has_none(
    triage_repo: TriageRepo,
) -> None:
    """`golden: file://…` written by whoever filed the incident, read byte for byte."""
    fixtures = triage_repo.case_path.parent / "fixtures"
    fixtures.mkdir()
    (fixtures / "0042-golden.txt").write_bytes(
        b"Your refund of 12,000 IDR was approved.\r\nIt arrives in 3 days."
    )
    text = triage_repo.case_path.read_text(encoding="utf-8")
    triage_repo.case_path.write_text(
        text.replace("tier: quality\n", "tier: quality\ngolden: file://fixtures/0042-golden.txt\n"),
        encoding="utf-8",
    )
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        diff = app.screen.query_one("#golden-diff", LazyText)
        assert diff.lines[0].startswith("Golden: the case's own reference answer")
        assert "there is no accepted baseline for this case" in diff.lines[0]
        assert "-Your refund of 12,000 IDR was approved.\\r" in diff.lines
        # The accepted baseline's golden output wins when there is one, and says so.
        save_baselines(triage_repo.ctx.store, EARLIER_RUNS[0], triage_repo.ctx.baseline_dir)
        triage_repo.ctx.forget_baselines()
        await pilot.press("escape", "2")
        await settle(pilot)
        diff = app.screen.query_one("#golden-diff", LazyText)
        assert diff.lines[0].startswith(
            f"Golden: the accepted baseline's golden output (run {EARLIER_RUNS[0]}"
        )


async def test_changed_words_inside_a_changed_line_are_marked(triage_repo: TriageRepo) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[0], triage_repo.ctx.baseline_dir)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        await pilot.press("j", "j", "j")  # sample 3: "12k" where the golden says "12,000 IDR"
        diff = app.screen.query_one("#golden-diff", LazyText)
        removed = diff.lines.index("-Your refund of 12,000 IDR was approved.")
        added = diff.lines.index("+Your refund of 12k was approved.")
        marked = [diff.lines[removed][a:b] for a, b in diff.spans[removed]]
        assert "".join(marked).split() == ["12", ",", "000", "IDR"] or "IDR" in "".join(marked)
        assert [diff.lines[added][a:b] for a, b in diff.spans[added]] == ["12k"]
        assert "Your" not in "".join(marked) and "approved" not in "".join(marked)


async def test_outputs_wrap_by_default_and_the_panes_scroll_together(
    triage_repo: TriageRepo,
) -> None:
    save_baselines(triage_repo.ctx.store, EARLIER_RUNS[0], triage_repo.ctx.baseline_dir)
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        raw = app.screen.query_one("#raw-output", LazyText)
        diff = app.screen.query_one("#golden-diff", LazyText)
        prose = " ".join(f"word{i}" for i in range(400))
        raw.set_lines([prose, *(f"line {i}" for i in range(200))])
        diff.set_lines([f"-{prose}", *(f"+line {i}" for i in range(300))])
        await pilot.pause()
        assert raw.wrap and raw.row_count > 201  # wrapped: no sideways scrolling to read
        assert raw.virtual_size.width <= raw.size.width
        raw.focus()
        await pilot.press("end")
        await pilot.pause()
        assert raw.scroll_y == raw.max_scroll_y > 0
        assert diff.scroll_y == diff.max_scroll_y  # followed at the same fraction
        await pilot.press("home")
        await pilot.pause()
        assert diff.scroll_y == 0
        await pilot.press("w")
        await pilot.pause()
        assert not raw.wrap and not diff.wrap
        assert raw.row_count == 201 and raw.virtual_size.width == len(prose)


async def test_one_megabyte_output_shows_the_lines_at_the_scrolled_position_lazily(
    triage_repo: TriageRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A megabyte on one line, then 20,000 short lines: the pane shows the right rows at
    every scroll position, and paints only the rows on screen (never the thousands of rows
    the long line wraps to)."""
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "2")
        await settle(pilot)
        raw = app.screen.query_one("#raw-output", LazyText)
        painted: set[int] = set()
        paint = raw.render_line

        def counted(y: int) -> Strip:
            painted.add(round(raw.scroll_y) + y)
            return paint(y)

        monkeypatch.setattr(raw, "render_line", counted)
        raw.set_lines(["x" * 1_000_000, *(f"line {i}" for i in range(20_000))])
        raw.focus()
        await pilot.pause()
        width, height = raw.scrollable_content_region.size
        long_rows = -(-1_000_000 // width)
        assert _rows(raw, height)[:2] == ["x" * width] * 2  # the long line, wrapped
        await pilot.press("end")
        await pilot.pause()
        assert _rows(raw, height)[-1] == "line 19999"
        assert _rows(raw, height)[0] == f"line {20_000 - height}"
        await pilot.press("pageup")
        await pilot.pause()
        assert _rows(raw, height)[0] == f"line {20_000 - 2 * height}"
        bottom = long_rows + 20_000 - height
        # Painted: the first screenful and the last two, nothing between.
        assert painted <= {*range(height), *range(bottom - height, bottom + height)}
        await pilot.press("w", "home")
        await pilot.pause()
        top = _rows(raw, height)
        assert set(top[0]) == {"x"} and top[1:3] == ["line 0", "line 1"]  # cut, not wrapped
        await pilot.press("end")
        await pilot.pause()
        height = raw.scrollable_content_region.height  # a sideways scrollbar took a row
        assert _rows(raw, height)[-1] == "line 19999"


def _rows(view: LazyText, height: int) -> list[str]:
    """The text of each row the view shows now, as painted."""
    return [view.render_line(y).text.rstrip() for y in range(height)]


async def test_history_bars_reruns_and_marginal_analysis(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#history-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert len(rows) == 5
        assert rows[-1][1] == f"↳{RERUN}"
        assert rows[3][0].startswith("▶") and rows[3][3] == "3/5" and rows[3][4] == "fail"
        assert rows[3][6] == "no branch@0123456"  # the store's runs recorded no branch
        assert table.cursor_row == 3  # on the triaged run
        assert screen.history is not None and screen.history.reruns[0].run_id == RERUN
        trend = _static_text(app, "#history-trend")
        assert trend.startswith("Trend ") and "95% interval" in trend


async def test_history_marks_model_change_and_marginal_case(triage_repo: TriageRepo) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # 0007-marginal-tone: 4,3,4,3 of 5 with 4 required
        await settle(pilot)
        table = app.screen.query_one("#history-table", DataTable)
        marks = [str(table.get_row_at(i)[5]) for i in range(table.row_count)]
        assert marks[2] == "▲"
        assert marks[1] == "" and marks[3] == ""
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
        header = _static_text(app, "#compare-header")
        dropped = sum(1 for d in screen.rows if d.delta is not None and d.delta < 0)
        drops = len(screen.comparison.significant_drops)
        assert f"{dropped} dropped ({drops} significantly, p < 0.05)" in header
        assert "1 case file(s) changed, not compared" in header
        changed = screen.query_one("#changed-table", DataTable)
        assert changed.row_count == 1
        assert [str(c) for c in changed.get_row_at(0)] == [
            "support/0031-escalation",
            "5/5 100%",
            "5/5 100%",
        ]
        await pilot.press("enter")
        await settle(pilot)
        outputs = app.screen
        assert isinstance(outputs, OutputsScreen)
        labels = {label for label, _ in outputs.samples}
        assert labels == {"A c0ffee", "B c0ffee"}
        assert len(outputs.samples) == 10


async def test_compare_screen_shows_cost_latency_tokens_and_sorts_by_any_column(
    triage_repo: TriageRepo,
) -> None:
    app = TriageApp(triage_repo.ctx)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        table = screen.query_one("#compare-table", DataTable)
        headers = [str(c.label) for c in table.columns.values()]
        assert {"mean latency ms", "p95 latency ms", "cost per 1k calls", "truncated Δ"} <= set(
            headers
        )
        assert "cost per 1k calls unknown → unknown" in _static_text(app, "#compare-header")

        # A click on a header sorts by that column; a second click turns the order around.
        keys = [k.value for k in table.columns]
        x = sum(c.get_render_width(table) for c in list(table.columns.values())[:1]) + 2
        await pilot.click("#compare-table", offset=(x, 0))
        await settle(pilot)
        assert screen.sort_key == keys[1] == "a"
        rates = [d.rate_a for d in screen.rows if d.rate_a is not None]
        assert rates == sorted(rates)
        await pilot.click("#compare-table", offset=(x, 0))
        await settle(pilot)
        assert screen.descending
        rates = [d.rate_a for d in screen.rows if d.rate_a is not None]
        assert rates == sorted(rates, reverse=True)
        assert str(table.columns[table.ordered_columns[1].key].label).endswith("▼")

        # `s` steps through the columns; the rows follow the column's value.
        while screen.sort_key != "p95":
            await pilot.press("s")
            await settle(pilot)
        changes = [
            d.usage_b.p95_latency_ms - d.usage_a.p95_latency_ms  # type: ignore[operator]
            for d in screen.rows
        ]
        assert changes == sorted(changes)
        # Enter opens the outputs of the case under the cursor in the sorted order.
        first = screen.rows[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, OutputsScreen)
        assert app.screen.case.case_id == first.case_id


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
        await pilot.press("a")  # a run picker, not a typed id
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, RunsScreen)
        assert [r.id for r in picker.shown] == [RED_RUN, *reversed(EARLIER_RUNS)]
        row = [str(c) for c in picker.query_one(DataTable).get_row_at(1)]
        assert row[0] == "▶ c0ffee000003" and row[3] == "GREEN" and row[5] == "0123456"
        await pilot.press("G", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        assert screen.comparison.a.run.id == EARLIER_RUNS[0]
        header = _static_text(app, "#compare-header")
        assert "A c0ffee000001" in header and "openai:fake-model-2025-12" in header
        assert "B c0ffee000004" in header and "openai:fake-model-2026-01" in header


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
        # 95% Wilson intervals: 3/3 → 44–100%, 0/3 → 0–56%, 3/5 → 23–88%, 5/5 → 57–100%.
        (3, 3, 3, "████████▓▓▓▓▓▓▓▓▓▓▓▓│"),
        (0, 3, 3, "───────────░░░░░░░░░│"),
        (3, 5, 4, "████▓▓▓▓▓▓▓▓────│──░░"),
        (5, 5, 4, "███████████▓▓▓▓▓│▓▓▓▓"),
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
    assert str(rate_chart(point)) == bar
