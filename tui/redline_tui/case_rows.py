"""The Run screen's table rows: one per case, failing first, filterable by text and verdict."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.text import Text

from redline.deciding.cause import Cause, CauseProgress
from redline.presentation import CAUSE_STYLES, OUTCOME_ORDER, VERDICT_SHORT_NAMES
from redline.running.records import CaseRecord, TriageRecord
from redline.running.verdicts import VERDICT_ORDER, Verdict

#: Sortable columns: key → (label, sort key).
SORT_COLUMNS = ("outcome", "case", "tier", "passes", "required")


def verdict_named(name: str) -> Verdict | None:
    """The verdict a name or unambiguous prefix stands for (`malf` → malformed), else None."""
    name = name.lower()
    matches = [v for v in VERDICT_ORDER if v.value.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


def case_key(case: CaseRecord) -> str:
    return f"{case.suite}/{case.case_id}"


def pass_rate(case: CaseRecord) -> float:
    return case.passes / case.samples if case.samples else 0.0


def breakdown(case: CaseRecord) -> str:
    """Non-ok verdicts of a case, e.g. `2 wrong 1 trunc`; empty when every sample is ok."""
    parts = [
        f"{case.verdicts.get(v, 0)} {VERDICT_SHORT_NAMES[v]}"
        for v in VERDICT_ORDER
        if v is not Verdict.OK and case.verdicts.get(v, 0)
    ]
    return " ".join(parts)


def sort_cases(
    cases: Iterable[CaseRecord], column: str = "outcome", reverse: bool = False
) -> list[CaseRecord]:
    """Failing first by default; ties broken by pass rate, then suite and id."""

    def outcome_key(c: CaseRecord) -> tuple[object, ...]:
        return (OUTCOME_ORDER[c.result], pass_rate(c), c.suite, c.case_id)

    keys = {
        "outcome": outcome_key,
        "case": lambda c: (c.suite, c.case_id),
        "tier": lambda c: (c.tier, *outcome_key(c)),
        "passes": lambda c: (pass_rate(c), c.passes, c.suite, c.case_id),
        "required": lambda c: (c.required, *outcome_key(c)),
    }
    return sorted(cases, key=keys[column], reverse=reverse)


@dataclass(frozen=True)
class CaseFilter:
    """Text matches suite or case id (case-insensitive); a verdict keeps cases that have one."""

    text: str = ""
    verdict: Verdict | None = None

    @classmethod
    def parse(cls, query: str, verdict: Verdict | None = None) -> CaseFilter:
        """`v:wrong` (or `verdict:wrong`) inside the query selects a verdict too.

        The verdict may be abbreviated as the table shows it (`v:malf`, `v:trunc`), or by
        any prefix that names one verdict only.
        """
        words = []
        for word in query.split():
            name, sep, value = word.partition(":")
            chosen = verdict_named(value) if sep and name.lower() in ("v", "verdict") else None
            if chosen is not None:
                verdict = chosen
            else:
                words.append(word)
        return cls(" ".join(words).lower(), verdict)

    def matches(self, case: CaseRecord) -> bool:
        if self.verdict is not None and not case.verdicts.get(self.verdict, 0):
            return False
        return not self.text or self.text in case_key(case).lower()

    def apply(self, cases: Sequence[CaseRecord]) -> list[CaseRecord]:
        return [c for c in cases if self.matches(c)]

    def describe(self) -> str:
        parts = []
        if self.text:
            parts.append(f"text {self.text!r}")
        if self.verdict is not None:
            parts.append(f"verdict {self.verdict.value}")
        return ", ".join(parts) if parts else "none"


#: The Triage column's word for each stored state (a changed case reads "changed").
TRIAGE_WORDS = {Cause.CASE_CHANGED.value: "changed"}
#: A concluded cause in its own style; the states an action left, in theirs.
TRIAGE_STYLES = {
    **{TRIAGE_WORDS.get(cause.value, cause.value): style for cause, style in CAUSE_STYLES.items()},
    "retired": "dim",
    "accepted": "green",
    "quarantined": "magenta",
}
TRIAGE_WIDTH = len("quarantined")


def triage_text(state: TriageRecord | None, live: CauseProgress | None, running: bool) -> Text:
    """The Triage cell: the cause found, `running 40%` while sampling, or the action taken.

    A state stored as running whose analysis is not running in this app was cut off
    (the app was closed mid-way): it reads `stopped`, with how far it got.
    """
    if running:
        fraction = live.fraction if live is not None else 0.0
        return Text(f"running {fraction:.0%}", style="bold blue")
    if state is None:
        return Text("")
    if state.state in ("running", "stopped"):
        return Text(f"stopped {state.progress:.0%}", style="dim")
    word = TRIAGE_WORDS.get(state.state, state.state)
    return Text(word, style=TRIAGE_STYLES.get(word, ""))
