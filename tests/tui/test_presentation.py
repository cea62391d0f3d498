"""A verdict, run result or cause looks the same in the CLI and in the triage app."""

from __future__ import annotations

from dataclasses import replace

from rich.style import Style
from rich.text import Text
from triage_store import _run_record

from redline.cli.output import verdict_breakdown
from redline.deciding.case_rows import TRIAGE_STYLES, TRIAGE_WORDS, triage_text
from redline.presentation import CAUSE_STYLES, RESULT_STYLES, VERDICT_COLOURS
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import RunResult, RunStatus, TriageRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict
from redline_tui.screens.runs import run_result_text
from redline_tui.widgets.verdict_bar import bar_text, legend_text, verdict_badge


def _colour(text: Text, word: str) -> str | None:
    """The colour `word` is drawn in (a reverse badge fills its background with it)."""
    start = text.plain.index(word)
    style = Style.parse(str(text.style))
    for span in text.spans:
        if span.start <= start < span.end:
            style += Style.parse(str(span.style))
    return style.color.name if style.color is not None else None


def test_every_verdict_has_one_colour_in_the_cli_and_the_triage_app() -> None:
    counts = dict.fromkeys(VERDICT_ORDER, 1)
    cli = verdict_breakdown(counts)
    legend = legend_text(counts)
    for verdict in VERDICT_ORDER:
        colour = VERDICT_COLOURS[verdict]
        assert _colour(cli, f"{verdict} 1") == colour  # `redline show`
        assert _colour(legend, verdict.value) == colour  # the verdict bar's legend
        assert _colour(verdict_badge(verdict), verdict.value) == colour  # Outputs, Search
    # The bar is split by colour, so no two verdicts share one.
    assert len(set(VERDICT_COLOURS.values())) == len(VERDICT_ORDER)


def test_the_verdict_bar_is_drawn_in_the_verdict_colours() -> None:
    bar = bar_text({Verdict.OK: 3, Verdict.REFUSED: 1}, 8)
    assert bar.plain == "█" * 8
    assert [(s.end - s.start, str(s.style)) for s in bar.spans] == [(6, "green"), (2, "yellow")]


def test_run_results_and_causes_share_their_styles() -> None:
    red = replace(_run_record("r1", 1), status=RunStatus.FINISHED, result=RunResult.RED)
    assert run_result_text(red).plain == "RED"
    assert str(run_result_text(red).style) == RESULT_STYLES[RunResult.RED]
    cut = replace(red, status=RunStatus.INTERRUPTED, result=None)
    assert run_result_text(cut).plain == "interrupted"
    # The Triage column colours a concluded cause as Step 1 and `redline rerun` do.
    for cause, style in CAUSE_STYLES.items():
        assert TRIAGE_STYLES[TRIAGE_WORDS.get(cause.value, cause.value)] == style
    record = TriageRecord("r1", "support", "0042", "case-changed", 1.0)
    cell = triage_text(record, None, running=False)
    assert cell.plain == "changed" and str(cell.style) == CAUSE_STYLES[Cause.CASE_CHANGED]
