"""The Run screen's table rows: one per case, failing first, filterable by text and verdict."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text

from redline.deciding.baseline import Baseline
from redline.deciding.cause import CauseProgress
from redline.deciding.failure_groups import GroupRow, trend_of
from redline.deciding.groups import CaseTrend, Trend
from redline.deciding.history import case_history, find_marginal
from redline.presentation import CAUSE_STYLES, OUTCOME_ORDER, VERDICT_SHORT_NAMES
from redline.running.quarantine import quarantined_cases
from redline.running.store import RunStore
from redline.vocabulary.causes import Cause, TriageState
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunRecord, TriageRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

#: Sortable columns: key → (label, sort key).
SORT_COLUMNS = ("outcome", "case", "tier", "passes", "required")


def verdict_named(name: str) -> Verdict | None:
    """The verdict a name or unambiguous prefix stands for (`malf` → malformed), else None."""
    name = name.lower()
    matches = [v for v in VERDICT_ORDER if v.value.startswith(name)] if name else []
    return matches[0] if len(matches) == 1 else None


def case_key(case: CaseRecord) -> str:
    return f"{case.suite}/{case.case_id}"


def breakdown(case: CaseRecord) -> str:
    """Non-ok verdicts of a case, e.g. `2 wrong 1 trunc`; empty when every sample is ok."""
    return verdicts_breakdown(case.verdicts)


def verdicts_breakdown(verdicts: Mapping[Verdict, int]) -> str:
    parts = [
        f"{verdicts.get(v, 0)} {VERDICT_SHORT_NAMES[v]}"
        for v in VERDICT_ORDER
        if v is not Verdict.OK and verdicts.get(v, 0)
    ]
    return " ".join(parts)


#: The table's orders as SQL over the store's `cases` columns (a run may be too large to
#: read whole: the table pages through the order the store gives). Failing first by
#: default; ties broken by pass rate, then suite and id.
_RANK_SQL = (
    "(CASE result "
    + " ".join(f"WHEN '{outcome}' THEN {rank}" for outcome, rank in OUTCOME_ORDER.items())
    + " END)"
)
_RATE_SQL = "(CASE WHEN samples THEN CAST(passes AS REAL) / samples ELSE 0.0 END)"
_OUTCOME_SQL = (_RANK_SQL, _RATE_SQL, "suite", "case_id")
_SORT_SQL = {
    "outcome": _OUTCOME_SQL,
    "case": ("suite", "case_id"),
    "tier": ("tier", *_OUTCOME_SQL),
    "passes": (_RATE_SQL, "passes", "suite", "case_id"),
    "required": ("required", *_OUTCOME_SQL),
}


@dataclass(frozen=True)
class CaseQuery:
    """Which of a run's case results to read, as SQL over the store's `cases` columns."""

    where: str = "1"
    params: tuple[Any, ...] = ()
    #: The order: these keys (the last of them unique together), each descending or not.
    keys: tuple[str, ...] = ("suite", "case_id")
    descending: bool = False

    @property
    def order(self) -> str:
        return ", ".join(f"{key} DESC" if self.descending else key for key in self.keys)

    def also(self, where: str, *params: Any) -> CaseQuery:
        return replace(self, where=f"{self.where} AND {where}", params=(*self.params, *params))

    def position(self, store: RunStore, run_id: str, suite: str, case_id: str) -> int | None:
        """Where a case stands in this order (0: first), counted in SQL; None when the
        query leaves it out."""
        if not self.also("suite = ? AND case_id = ?", suite, case_id).count(store, run_id):
            return None
        keys = ", ".join(self.keys)
        before = self.also(
            f"({keys}) {'>' if self.descending else '<'} "
            f"(SELECT {keys} FROM cases WHERE run_id = ? AND suite = ? AND case_id = ?)",
            run_id,
            suite,
            case_id,
        )
        return before.count(store, run_id)

    def count(self, store: RunStore, run_id: str) -> int:
        return int(store.case_values(run_id, "count(*)", self.where, self.params)[0][0])

    def page(
        self, store: RunStore, run_id: str, offset: int, limit: int = -1, total: int | None = None
    ) -> list[CaseRecord]:
        """`limit` cases from `offset` on (-1: all). Given how many the query holds in all,
        a page past the middle is read from the end, in the reverse order: the store's sort
        then keeps the rows up to it from that end, not all those before it."""
        if total is not None and limit >= 0 and offset > total // 2:
            start, end = max(0, total - offset - limit), total - offset
            if end <= start:
                return []
            back = replace(self, descending=not self.descending)
            return back.page(store, run_id, start, end - start)[::-1]
        return store.select_cases(run_id, self.where, self.params, self.order, limit, offset)

    def failing(self) -> CaseQuery:
        return self.also("result = ?", str(CaseOutcome.FAIL))


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

    def query(self, query: CaseQuery) -> CaseQuery:
        """`query` narrowed to the cases whose suite/id holds the text (as `str.lower`
        compares, in any script) and that have a sample of the verdict."""
        if self.verdict is not None:
            query = query.also(f"n_{self.verdict} > 0")
        if self.text:
            query = query.also("instr(py_lower(suite || '/' || case_id), ?) > 0", self.text)
        return query

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
    TriageState.RETIRED.value: "dim",
    TriageState.ACCEPTED.value: "green",
    TriageState.QUARANTINED.value: "magenta",
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
    if state.state in (TriageState.RUNNING, TriageState.STOPPED):
        return Text(f"stopped {state.progress:.0%}", style="dim")
    word = TRIAGE_WORDS.get(state.state, state.state)
    return Text(word, style=TRIAGE_STYLES.get(word, ""))


@dataclass(frozen=True)
class CaseView:
    """Which cases the home table shows and in which order: a filter, a failure group,
    a sort column and its direction. One value, so a change re-renders once."""

    case_filter: CaseFilter = CaseFilter()
    group: GroupRow | None = None
    sort_column: str = "outcome"
    reverse: bool = False

    def query(self) -> CaseQuery:
        """The cases shown, in their order, as the store reads them a page at a time."""
        query = CaseQuery(keys=_SORT_SQL[self.sort_column], descending=self.reverse)
        if self.group is not None:
            query = query.also(
                "suite || '/' || case_id IN (SELECT value FROM json_each(?))",
                json.dumps(sorted(self.group.keys)),
            )
        return self.case_filter.query(query)

    def next_verdict(self) -> CaseView:
        """The verdict filter's next step: all → ok → wrong → … → all."""
        order: list[Verdict | None] = [None, *VERDICT_ORDER]
        verdict = order[(order.index(self.case_filter.verdict) + 1) % len(order)]
        return replace(self, case_filter=CaseFilter(self.case_filter.text, verdict))

    def next_sort(self) -> CaseView:
        index = SORT_COLUMNS.index(self.sort_column)
        return replace(
            self, sort_column=SORT_COLUMNS[(index + 1) % len(SORT_COLUMNS)], reverse=False
        )

    def sorted_by(self, column: str) -> CaseView:
        """Sorted by `column`; the same column again turns the order around."""
        if column == self.sort_column:
            return replace(self, reverse=not self.reverse)
        return replace(self, sort_column=column, reverse=False)

    def describe(self) -> str:
        """`group: … · filter: none · sort: outcome`, as the status line shows it."""
        group = f"group: {self.group.group.signature.label} · " if self.group else ""
        direction = " (reversed)" if self.reverse else ""
        return f"{group}filter: {self.case_filter.describe()} · sort: {self.sort_column}{direction}"


_TREND_STYLES = {Trend.NEW: "bold red", Trend.STILL_FAILING: "red", Trend.FLAPPING: "yellow"}


@dataclass(frozen=True)
class CaseMarks:
    """What a case's past says beside its result: its rates, trend and marks."""

    history: tuple[float | None, ...]
    changed: bool
    marginal: bool
    trend: CaseTrend | None = None
    quarantined: bool = False

    def text(self) -> Text:
        words: list[tuple[str, str]] = []
        if self.trend is not None:
            words.append((self.trend.label, _TREND_STYLES[self.trend.trend]))
        if self.quarantined:
            words.append(("quarantined", "magenta"))
        if self.changed:
            words.append(("changed", "bold magenta"))
        if self.marginal:
            words.append(("marginal", "bold yellow"))
        text = Text(overflow="ellipsis", no_wrap=True)
        for word, style in words:
            text.append(" " if text else "")
            text.append(word, style=style)
        return text


def read_marks(
    store: RunStore,
    baseline: Callable[[str], Baseline | None],
    run: RunRecord,
    cases: Sequence[CaseRecord],
) -> Iterator[tuple[str, CaseMarks]]:
    """Each case's marks as of `run`: its rates up to that run, whether its file changed since
    the accepted baseline, whether it is marginal, its trend and quarantine (a store read
    per case, so a caller shows them as they come)."""
    held = {case_key(q.case) for q in quarantined_cases(run, cases)}
    for case in cases:
        series = [
            p
            for p in case_history(store, case.case_id, case.suite).scheduled
            if p.started_at <= run.started_at
        ]
        accepted = baseline(case.suite)
        accepted_case = None if accepted is None else accepted.cases.get(case.case_id)
        yield (
            case_key(case),
            CaseMarks(
                history=tuple(p.rate for p in series),
                changed=accepted_case is not None and accepted_case.case_hash != case.case_hash,
                marginal=find_marginal(series) is not None,
                trend=trend_of(series, run, case),
                quarantined=case_key(case) in held,
            ),
        )
