"""The home table's view: one value for filter, group and sort, each key a new view."""

from __future__ import annotations

from pathlib import Path

import pytest
from triage_store import RED_RUN, SUITE

from redline.deciding.case_rows import SORT_COLUMNS, CaseFilter, CaseView
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome, CaseRecord
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict
from runfactory import RunSpec, open_store, write_run


def _case(case_id: str, passes: int, tier: str = "quality", wrong: int = 0) -> CaseRecord:
    verdicts = {Verdict.OK: passes, Verdict.WRONG: wrong} if wrong else {Verdict.OK: passes}
    return CaseRecord(
        run_id="r",
        suite="support",
        case_id=case_id,
        tier=tier,
        model_id="m",
        samples=passes + wrong,
        required=3,
        passes=passes,
        result=CaseOutcome.PASS if passes >= 3 else CaseOutcome.FAIL,
        verdicts=verdicts,
        case_hash="h",
    )


CASES = [
    _case("0001-greeting", 5, tier="contract"),
    _case("0042-amount", 1, wrong=4),
    _case("0013-json", 2, wrong=3),
]


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    """A run holding CASES: the table reads a view's cases from the store."""
    store = open_store(tmp_path)
    write_run(store, RunSpec("r", []))
    store.put_cases(CASES)
    return store


def _shown(view: CaseView, store: RunStore) -> list[str]:
    """The ids of the cases `view` shows, in its order."""
    return [c.case_id for c in view.query().page(store, "r", 0)]


def test_failing_cases_come_first_by_pass_rate(store: RunStore) -> None:
    assert _shown(CaseView(), store) == ["0042-amount", "0013-json", "0001-greeting"]


def test_the_verdict_key_steps_through_every_verdict_and_back_to_all(store: RunStore) -> None:
    view = CaseView(case_filter=CaseFilter("json"))
    seen = []
    for _ in range(len(VERDICT_ORDER) + 1):
        view = view.next_verdict()
        seen.append(view.case_filter.verdict)
        assert view.case_filter.text == "json"  # the text filter stays
    assert seen == [*VERDICT_ORDER, None]
    wrong = CaseView(case_filter=CaseFilter(verdict=Verdict.WRONG))
    assert _shown(wrong, store) == ["0042-amount", "0013-json"]


def test_sorting_by_the_same_column_again_reverses_it(store: RunStore) -> None:
    by_case = CaseView().sorted_by("case")
    assert _shown(by_case, store) == ["0001-greeting", "0013-json", "0042-amount"]
    reversed_view = by_case.sorted_by("case")
    assert reversed_view.reverse
    assert _shown(reversed_view, store) == ["0042-amount", "0013-json", "0001-greeting"]
    assert "sort: case (reversed)" in reversed_view.describe()
    assert reversed_view.sorted_by("tier") == CaseView(sort_column="tier")


def test_the_sort_key_cycles_through_the_sortable_columns() -> None:
    view = CaseView()
    columns = []
    for _ in SORT_COLUMNS:
        view = view.next_sort()
        columns.append(view.sort_column)
    assert columns == [*SORT_COLUMNS[1:], SORT_COLUMNS[0]]
    assert CaseView().next_sort() == CaseView().next_sort()  # equal views: no re-render


def test_a_case_is_found_in_a_run_by_suite_and_id_only(fixed_store: RunStore) -> None:
    """`RunStore.case`: the one lookup Step 1's arms, `redline show` and accepting a baseline
    from a rerun share."""
    found = fixed_store.case(RED_RUN, SUITE, "0042-amount-suffix")
    assert found is not None and found.run_id == RED_RUN and found.case_id == "0042-amount-suffix"
    assert fixed_store.case(RED_RUN, "other-suite", "0042-amount-suffix") is None
    assert fixed_store.case(RED_RUN, SUITE, "9999-missing") is None
    assert fixed_store.case("no-such-run", SUITE, "0042-amount-suffix") is None
