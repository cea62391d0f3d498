"""vocabulary/outcome.py as tables: verdict counts → case result → run result."""

from __future__ import annotations

import pytest

from redline.vocabulary.outcome import (
    MAX_NON_CONTENT_SHARE,
    MIN_CASES_FOR_CONTENT,
    add_counts,
    case_outcome,
    content_comparison_withheld,
    run_result,
    scale_required,
    too_noisy,
)
from redline.vocabulary.records import CaseOutcome, RunResult
from redline.vocabulary.verdicts import Verdict

OK, WRONG, MALFORMED, REFUSED, TRUNCATED, TRANSPORT = (
    Verdict.OK,
    Verdict.WRONG,
    Verdict.MALFORMED,
    Verdict.REFUSED,
    Verdict.TRUNCATED,
    Verdict.TRANSPORT,
)
PASS, FAIL, INCONCLUSIVE = CaseOutcome.PASS, CaseOutcome.FAIL, CaseOutcome.INCONCLUSIVE


# (required, verdict counts of one case) -> the case's result
CASE_TABLE = [
    (5, {OK: 5}, PASS),
    (5, {OK: 6}, PASS),
    (4, {OK: 4, WRONG: 1}, PASS),
    (5, {OK: 4, WRONG: 1}, FAIL),
    (5, {OK: 4, MALFORMED: 1}, FAIL),
    (5, {OK: 4, REFUSED: 1}, FAIL),
    (5, {WRONG: 5}, FAIL),
    (5, {}, FAIL),
    # Truncated and transport samples could still have passed: undecided, not failed.
    (5, {OK: 4, TRUNCATED: 1}, INCONCLUSIVE),
    (5, {OK: 4, TRANSPORT: 1}, INCONCLUSIVE),
    (5, {OK: 3, TRUNCATED: 1, TRANSPORT: 1}, INCONCLUSIVE),
    (5, {TRANSPORT: 5}, INCONCLUSIVE),
    # ...unless even all of them passing would not reach the bar.
    (5, {OK: 3, WRONG: 1, TRANSPORT: 1}, FAIL),
    (4, {OK: 3, WRONG: 1, TRANSPORT: 1}, INCONCLUSIVE),
    # Enough passes decide, whatever else happened.
    (3, {OK: 3, WRONG: 1, TRANSPORT: 1}, PASS),
]


@pytest.mark.parametrize(
    ("required", "counts", "expected"),
    CASE_TABLE,
    ids=[f"need{r}-" + "-".join(f"{v}{n}" for v, n in c.items()) for r, c, _ in CASE_TABLE],
)
def test_case_outcome_from_verdict_counts(
    required: int, counts: dict[Verdict, int], expected: CaseOutcome
) -> None:
    assert case_outcome(required, counts) is expected


# (each case's required and verdict counts) -> the run's result
RUN_TABLE = [
    ("all-pass", [(5, {OK: 5})] * 3, RunResult.GREEN),
    ("one-fail-is-red", [(5, {OK: 5}), (5, {OK: 2, WRONG: 3})], RunResult.RED),
    (
        "undecided-case-is-inconclusive",
        [(5, {OK: 5})] * 9 + [(5, {OK: 4, TRANSPORT: 1})],
        RunResult.INCONCLUSIVE,
    ),
    (
        "fail-beats-undecided",
        [(5, {OK: 5})] * 8 + [(5, {OK: 4, TRANSPORT: 1}), (5, {WRONG: 5})],
        RunResult.RED,
    ),
    # 5 of 20 samples (25%) never tested the content: inconclusive even with a failing case.
    (
        "noise-over-the-limit-beats-fail",
        [(5, {TRANSPORT: 5}), (5, {WRONG: 5}), (5, {OK: 5}), (5, {OK: 5})],
        RunResult.INCONCLUSIVE,
    ),
    # 2 of 10 samples truncated: exactly at the limit, not over it.
    ("noise-at-the-limit", [(4, {OK: 4, TRUNCATED: 1})] * 2, RunResult.GREEN),
    ("no-cases", [], RunResult.GREEN),
]


@pytest.mark.parametrize(
    ("cases", "expected"), [row[1:] for row in RUN_TABLE], ids=[row[0] for row in RUN_TABLE]
)
def test_run_result_from_case_counts(
    cases: list[tuple[int, dict[Verdict, int]]], expected: RunResult
) -> None:
    outcomes = [case_outcome(required, counts) for required, counts in cases]
    totals = add_counts(counts for _, counts in cases)
    assert run_result(outcomes, totals) is expected


def test_add_counts_sums_every_verdict_and_lists_the_absent_ones_as_zero() -> None:
    total = add_counts([{OK: 2, WRONG: 1}, {OK: 1, TRANSPORT: 3}])
    assert total == {OK: 3, WRONG: 1, MALFORMED: 0, REFUSED: 0, TRUNCATED: 0, TRANSPORT: 3}


@pytest.mark.parametrize(
    ("required", "samples", "new_samples", "expected"),
    [
        (5, 5, 5, 5),
        (4, 5, 10, 8),
        (4, 5, 20, 16),
        (9, 10, 30, 27),
        (2, 3, 10, 7),  # 6.67 rounds up: the bar never drops
        (1, 10, 3, 1),  # never below one pass
    ],
)
def test_scale_required_keeps_the_pass_rate(
    required: int, samples: int, new_samples: int, expected: int
) -> None:
    assert scale_required(required, samples, new_samples) == expected


def test_too_noisy_says_the_share_and_the_limit_only_over_it() -> None:
    assert too_noisy({OK: 8, TRANSPORT: 2}) is None
    reason = too_noisy({OK: 7, TRUNCATED: 1, TRANSPORT: 2})
    assert reason is not None
    assert "30%" in reason and f"{MAX_NON_CONTENT_SHARE:.0%}" in reason
    assert too_noisy({}) is None


@pytest.mark.parametrize(
    ("cases", "counts", "withheld_because"),
    [
        (MIN_CASES_FOR_CONTENT, {OK: 10}, None),
        (MIN_CASES_FOR_CONTENT - 1, {OK: 10}, ["fewer than 8"]),
        (MIN_CASES_FOR_CONTENT, {OK: 7, TRANSPORT: 3}, ["truncated or transport"]),
        (2, {OK: 5, TRUNCATED: 5}, ["fewer than 8", "truncated or transport"]),
    ],
)
def test_content_comparison_withheld_names_every_reason(
    cases: int, counts: dict[Verdict, int], withheld_because: list[str] | None
) -> None:
    reason = content_comparison_withheld(cases, counts)
    if withheld_because is None:
        assert reason is None
    else:
        assert reason is not None
        for words in withheld_because:
            assert words in reason
