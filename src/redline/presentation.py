"""How results look to a person: one style and one order per case outcome, for CLI and TUI."""

from __future__ import annotations

from redline.running.records import CaseOutcome

#: Rich style strings (the CLI prints them, the TUI renders them as Text styles).
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
