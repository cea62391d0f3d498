"""How results look to a person: one name, colour and order per verdict, case outcome, run
result and cause, for the CLI and the TUI alike.

Styles are Rich style strings: the CLI prints them, the TUI renders them as Text styles.
A verdict has one colour wherever it is shown, so a reader who learnt that magenta means
malformed in `redline show` reads the triage app's bar the same way.
"""

from __future__ import annotations

import re

from redline.vocabulary.causes import Cause
from redline.vocabulary.records import CaseOutcome, RunResult, SampleRecord
from redline.vocabulary.verdicts import Verdict

#: One colour per verdict, distinct from each other (the verdict bar is split by them) and
#: readable on dark and light themes alike.
VERDICT_COLOURS = {
    Verdict.OK: "green",
    Verdict.WRONG: "red",
    Verdict.MALFORMED: "magenta",
    Verdict.REFUSED: "yellow",
    Verdict.TRUNCATED: "cyan",
    Verdict.TRANSPORT: "blue",
}

#: The named colours above as a web page draws them: dark enough to carry white text on a
#: badge, so the HTML report reads a verdict in the same colour as the terminal.
WEB_COLOURS = {
    "green": "#2e7d32",
    "red": "#c62828",
    "magenta": "#ad1457",
    "yellow": "#9a6b00",
    "cyan": "#00796b",
    "blue": "#1565c0",
}

#: A verdict named in text: its colour, bold.
VERDICT_STYLES = {verdict: f"bold {colour}" for verdict, colour in VERDICT_COLOURS.items()}

#: Short verdict names for narrow columns and the filter language (`v:malf`).
VERDICT_SHORT_NAMES = {
    Verdict.OK: "ok",
    Verdict.WRONG: "wrong",
    Verdict.MALFORMED: "malf",
    Verdict.REFUSED: "refus",
    Verdict.TRUNCATED: "trunc",
    Verdict.TRANSPORT: "transp",
}

#: The verdict bar's cell: one per share of the samples.
VERDICT_BAR_CELL = "█"

OUTCOME_STYLES = {
    CaseOutcome.PASS: "green",
    CaseOutcome.FAIL: "bold red",
    CaseOutcome.INCONCLUSIVE: "yellow",
    CaseOutcome.MARGINAL: "dark_orange",
}

#: Worst first: the order in which lists of cases are read.
OUTCOME_ORDER = {
    CaseOutcome.FAIL: 0,
    CaseOutcome.INCONCLUSIVE: 1,
    CaseOutcome.MARGINAL: 2,
    CaseOutcome.PASS: 3,
}

#: Short labels for a narrow result column.
OUTCOME_LABELS = {
    CaseOutcome.FAIL: "FAIL",
    CaseOutcome.INCONCLUSIVE: "INCONC",
    CaseOutcome.MARGINAL: "MARGIN",
    CaseOutcome.PASS: "pass",
}

#: A run's result in a list of runs.
RESULT_STYLES = {
    RunResult.GREEN: "green",
    RunResult.RED: "bold red",
    RunResult.INCONCLUSIVE: "yellow",
}

#: A run's result as the headline of a run (its header, the last line of `redline run`).
RESULT_HEADLINE_STYLES = {
    RunResult.GREEN: "bold green",
    RunResult.RED: "bold red",
    RunResult.INCONCLUSIVE: "bold yellow",
}

#: The cause Step 1 (and `redline rerun`) concluded: a regression red, the case's own
#: problem yellow, noise cyan; drift (the provider) and settings (your bar) blue.
CAUSE_STYLES = {
    Cause.PROMPT: "bold red",
    Cause.MODEL: "bold red",
    Cause.DRIFT: "bold blue",
    Cause.SETTINGS: "bold blue",
    Cause.CASE: "bold yellow",
    Cause.NOISE: "bold cyan",
    Cause.CASE_CHANGED: "bold magenta",
    Cause.UNDECIDED: "bold",
}


def result_headline_style(result: RunResult | None) -> str:
    """A finished run's result style; a run without a result (cut off) reads as inconclusive."""
    return RESULT_HEADLINE_STYLES[result or RunResult.INCONCLUSIVE]


def stopped_early_note(sample: SampleRecord) -> str | None:
    """Why a sample's output ends where it does when redline stopped generating it (the
    verdict could no longer change); None when the model finished by itself."""
    if sample.stopped_early is None:
        return None
    after = f" after {sample.output_tokens} tokens" if sample.output_tokens is not None else ""
    return (
        f"stopped early: redline ended the generation{after}, as no further text could "
        f"change the verdict ({sample.stopped_early}); the output is what was written "
        "until then (stop_when_settled = false keeps whole outputs)"
    )


_DIGEST = re.compile(r"@sha256:([0-9a-f]{12})[0-9a-f]{52}\b")


def short_model_id(model_id: str) -> str:
    """A pinned id with its file's SHA-256 cut to 12 hex digits, so a header fits 80 columns.

    `local:smollm2-135m-instruct-q4_1@sha256:b179c9523d0e6a…` → `…@sha256:b179c9523d0e`;
    `redline show` and the store keep the full digest.
    """
    return _DIGEST.sub(r"@sha256:\1", model_id)
