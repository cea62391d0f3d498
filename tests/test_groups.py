"""Failing cases grouped by how they fail, and marked new / still failing / flapping."""

from __future__ import annotations

from redline.deciding.groups import CaseTrend, Trend, case_trend, failure_signature, group_failures
from redline.deciding.history import HistoryPoint
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunKind, SampleRecord
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict

#: Five ways to fail: (first failing assertion index, its type, the sample verdict).
REASONS = [
    (0, "is-json", Verdict.MALFORMED),
    (1, "python", Verdict.WRONG),
    (2, "not-contains", Verdict.WRONG),
    (None, "", Verdict.TRANSPORT),
    (3, "max-words", Verdict.TRUNCATED),
]
DESCRIBED = {0: "is-json schemas/invoice.schema.json", 1: 'python json["total_idr"] == 125000'}


def _sample(case_id: str, index: int, reason: int | None) -> SampleRecord:
    results = []
    verdict = Verdict.OK
    if reason is not None:
        at, type_name, verdict = REASONS[reason]
        if at is not None:
            # The first failure decides the signature; a later failing assertion is noise.
            results = [
                AssertionResult(at, type_name, AssertionStatus.FAILED, "failed"),
                AssertionResult(at + 5, "regex", AssertionStatus.FAILED, "failed"),
            ]
    return SampleRecord("r", "s", case_id, index, "out", verdict, None, assertions=tuple(results))


def _case(case_id: str, reason: int | None) -> tuple[CaseRecord, list[SampleRecord]]:
    # Three of five samples fail, the last of them for another reason: the majority wins.
    samples = [_sample(case_id, i, reason if i < 3 else None) for i in range(5)]
    if reason is not None:
        samples[2] = _sample(case_id, 2, (reason + 1) % len(REASONS))
    result = CaseOutcome.PASS if reason is None else CaseOutcome.FAIL
    counts: dict[Verdict, int] = {}
    for s in samples:
        counts[s.verdict] = counts.get(s.verdict, 0) + 1
    passes = counts.get(Verdict.OK, 0)
    return CaseRecord("r", "s", case_id, "quality", "m", 5, 4, passes, result, counts, "h"), samples


def _describe(suite: str, case_id: str, index: int) -> str | None:
    return DESCRIBED.get(index)


def test_a_nightly_of_200_cases_with_40_failing_shows_5_groups() -> None:
    cases: list[CaseRecord] = []
    samples: dict[tuple[str, str], list[SampleRecord]] = {}
    for i in range(200):
        reason = i % len(REASONS) if i < 40 else None
        record, recorded = _case(f"c{i:03d}", reason)
        cases.append(record)
        samples[("s", record.case_id)] = recorded
    groups = group_failures(cases, samples, _describe)
    assert [len(g.cases) for g in groups] == [8] * 5
    labels = {g.signature.label for g in groups}
    assert labels == {
        "is-json schemas/invoice.schema.json (malformed)",
        'python json["total_idr"] == 125000 (wrong)',
        "not-contains (assertion 3) (wrong)",
        "transport",
        "max-words (assertion 4) (truncated)",
    }
    assert all(c.result is CaseOutcome.FAIL for g in groups for c in g.cases)


def test_signature_without_the_case_file_names_type_and_position() -> None:
    record, recorded = _case("c", 1)
    assert failure_signature(record, recorded).label == "python (assertion 2) (wrong)"


def _point(run: str, result: CaseOutcome, model: str = "m") -> HistoryPoint:
    return HistoryPoint(run, RunKind.RUN, None, run, model, 5, 0, 4, result, "h")


P, F, U = CaseOutcome.PASS, CaseOutcome.FAIL, CaseOutcome.INCONCLUSIVE


def test_trend_new_still_failing_and_flapping() -> None:
    def trend(results: list[CaseOutcome], models: list[str] | None = None) -> CaseTrend:
        names = models or ["m"] * len(results)
        points = [_point(f"r{i}", r, names[i]) for i, r in enumerate(results)]
        return case_trend(points, points[-1].run_id)

    assert trend([P, P, P, F]) == CaseTrend(Trend.NEW)
    assert trend([F]) == CaseTrend(Trend.NEW)
    assert trend([P, F, U, F, F]) == CaseTrend(Trend.STILL_FAILING, 3)
    assert trend([P, F, P, P, F]).trend is Trend.FLAPPING
    # A model bump does not restart the history: still failing, and it says where it changed.
    migrated = trend([F, F, F, F], ["old", "old", "old", "new"])
    assert migrated == CaseTrend(Trend.STILL_FAILING, 4, "old → new", 0)
    assert migrated.label == "still failing (4 runs; model changed at this run)"
    assert trend([P, P, F], ["old", "old", "new"]).label == "new (model changed at this run)"
    assert CaseTrend(Trend.STILL_FAILING, 3).label == "still failing (3 runs)"
