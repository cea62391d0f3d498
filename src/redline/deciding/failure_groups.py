"""The home screen's failure groups: a red night read by cause, each case marked by its past."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from redline.config import Config
from redline.deciding.groups import (
    CaseTrend,
    Describe,
    FailureGroup,
    Trend,
    case_trend,
    group_failures,
)
from redline.deciding.history import HistoryPoint
from redline.errors import RedlineError
from redline.running.manifest import case_hash
from redline.running.store import RunStore
from redline.suite.cases import Case, load_suites
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunRecord


@dataclass(frozen=True)
class GroupRow:
    """One group as the home screen lists it."""

    group: FailureGroup
    trends: Counter[Trend]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(f"{c.suite}/{c.case_id}" for c in self.group.cases)

    def label(self) -> str:
        """`12 × contains '12,000' (wrong) · 9 new, 2 still failing, 1 flapping`"""
        counts = ", ".join(
            f"{self.trends[t]} {t.value}"
            for t in (Trend.NEW, Trend.STILL_FAILING, Trend.FLAPPING)
            if self.trends[t]
        )
        tail = f" · {counts}" if counts else ""
        return f"{len(self.group.cases):>3} × {self.group.signature.label}{tail}"


def describer(config: Config | None, cases: Sequence[CaseRecord]) -> Describe | None:
    """Assertion labels from the case files, only where a file is still what the run
    checked (same hash): a case loosened or retired since is labelled from what the run
    recorded instead (None when the suites do not load)."""
    if config is None:
        return None
    try:
        suites = load_suites(config.suites, config)
    except RedlineError:
        return None
    recorded = {(c.suite, c.case_id): c.case_hash for c in cases}
    folders: dict[str, str] = {}
    unchanged: dict[tuple[str, str], Case] = {}
    for suite in suites:
        for case in suite.cases:
            key = (case.suite, case.id)
            if key in recorded and case_hash(case, folders) == recorded[key]:
                unchanged[key] = case

    def describe(suite: str, case_id: str, index: int) -> str | None:
        case = unchanged.get((suite, case_id))
        if case is None or not 0 <= index < len(case.assertions):
            return None
        return case.assertions[index].describe()

    return describe


def failure_groups(
    store: RunStore,
    run: RunRecord,
    cases: Sequence[CaseRecord],
    trends: dict[str, CaseTrend],
    describe: Describe | None,
) -> list[GroupRow]:
    """The run's failing cases by signature, the largest group first, with their trends."""
    failing = [c for c in cases if c.result is CaseOutcome.FAIL]
    samples = {(c.suite, c.case_id): store.samples(run.id, c.case_id, c.suite) for c in failing}
    rows = []
    for group in group_failures(failing, samples, describe):
        counted = Counter(
            trends[key].trend for c in group.cases if (key := f"{c.suite}/{c.case_id}") in trends
        )
        rows.append(GroupRow(group, counted))
    return rows


def trend_of(series: Sequence[HistoryPoint], run: RunRecord, case: CaseRecord) -> CaseTrend | None:
    """New / still failing / flapping for a failing case; None for the others."""
    if case.result is not CaseOutcome.FAIL:
        return None
    return case_trend(series, run.id)


__all__ = ["GroupRow", "describer", "failure_groups", "trend_of"]
