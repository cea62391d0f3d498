"""Quarantined cases: they run and report, but cannot turn a run red until their date.

A flapping case is a triage every night; retiring it loses the incident it guards. A
quarantine (`quarantine: {reason, ticket, until}` in the case file) sits between: the run
records which cases were held when it started, leaves them out of its red/green result,
and reports lists them on their own, with "passing again — release?" once they pass.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redline.vocabulary.records import CaseOutcome, CaseRecord, RunRecord

if TYPE_CHECKING:
    from redline.suite.cases import Suite

#: The run argument naming the cases quarantined when the run started ("suite/case" → why).
QUARANTINED_ARG = "quarantined"


def active_quarantines(suites: Sequence[Suite], today: datetime.date) -> dict[str, str]:
    """ "suite/case" → why, for every case whose quarantine has not ended by `today`."""
    return {
        f"{c.suite}/{c.id}": c.quarantine.describe()
        for s in suites
        for c in s.cases
        if c.quarantine is not None and c.quarantine.active(today)
    }


def quarantined(run: RunRecord) -> Mapping[str, str]:
    """The run's quarantined cases ("suite/case" → why)."""
    held = run.args.get(QUARANTINED_ARG)
    return held if isinstance(held, dict) else {}


@dataclass(frozen=True)
class QuarantinedCase:
    case: CaseRecord
    why: str

    @property
    def passing_again(self) -> bool:
        return self.case.result is CaseOutcome.PASS

    @property
    def label(self) -> str:
        state = "passing again — release?" if self.passing_again else str(self.case.result)
        return f"{self.case.passes}/{self.case.samples} {state} · {self.why}"


#: How a case held in quarantine is counted and labelled in summaries and reports.
QUARANTINED = "quarantined"


def case_counts(run: RunRecord, cases: Sequence[CaseRecord]) -> list[tuple[str, int]]:
    """(outcome, cases) for every outcome, quarantined cases apart: a held case is never
    counted as a failure (or a pass) of the run, the run summary, Markdown and HTML alike."""
    held = quarantined(run)
    counted = [c for c in cases if f"{c.suite}/{c.case_id}" not in held]
    counts = [(str(o), sum(c.result is o for c in counted)) for o in CaseOutcome]
    return counts + (
        [(QUARANTINED, len(cases) - len(counted))] if len(counted) < len(cases) else []
    )


def shown_result(run: RunRecord, case: CaseRecord) -> str:
    """A case's result as reports label it: `quarantined` for a held case that did not pass
    (it cannot turn the run red), else its outcome."""
    held = f"{case.suite}/{case.case_id}" in quarantined(run)
    return QUARANTINED if held and case.result is not CaseOutcome.PASS else str(case.result)


def describe_counts(counts: Sequence[tuple[str, int]]) -> str:
    """`3 pass, 1 fail, 0 inconclusive, 0 marginal, 2 quarantined`."""
    return ", ".join(f"{n} {name}" for name, n in counts)


def quarantined_cases(run: RunRecord, cases: Sequence[CaseRecord]) -> list[QuarantinedCase]:
    """The run's cases that were held in quarantine, in the run's case order."""
    held = quarantined(run)
    return [
        QuarantinedCase(c, held[f"{c.suite}/{c.case_id}"])
        for c in cases
        if f"{c.suite}/{c.case_id}" in held
    ]


__all__ = [
    "QUARANTINED",
    "QUARANTINED_ARG",
    "QuarantinedCase",
    "active_quarantines",
    "case_counts",
    "describe_counts",
    "quarantined",
    "quarantined_cases",
    "shown_result",
]
