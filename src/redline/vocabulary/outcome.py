"""From verdict counts to case and run results (docs/rules.md: A rate, not a boolean;
Content diffs need enough evidence)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from redline.vocabulary.records import CaseOutcome, RunResult
from redline.vocabulary.verdicts import NON_CONTENT_VERDICTS, Verdict

#: Content diffs need enough evidence (docs/rules.md): at least this many evaluated
#: cases...
MIN_CASES_FOR_CONTENT = 8
#: ...and at most this share of non-content (truncated, transport) samples.
MAX_NON_CONTENT_SHARE = 0.20


def scale_required(required: int, samples: int, new_samples: int) -> int:
    """The same pass-rate bar at another sample count (a rerun with more samples)."""
    if new_samples == samples:
        return required
    return max(1, math.ceil(new_samples * required / samples - 1e-9))


def case_outcome(required: int, verdicts: Mapping[Verdict, int]) -> CaseOutcome:
    """Pass when enough samples are ok; fail when even the undecided ones could not save it."""
    passes = verdicts.get(Verdict.OK, 0)
    undecided = sum(verdicts.get(v, 0) for v in NON_CONTENT_VERDICTS)
    if passes >= required:
        return CaseOutcome.PASS
    if passes + undecided < required:
        return CaseOutcome.FAIL
    return CaseOutcome.INCONCLUSIVE


def non_content_share(verdicts: Mapping[Verdict, int]) -> float:
    total = sum(verdicts.values())
    if total == 0:
        return 0.0
    return sum(verdicts.get(v, 0) for v in NON_CONTENT_VERDICTS) / total


def add_counts(counts: Iterable[Mapping[Verdict, int]]) -> dict[Verdict, int]:
    total: dict[Verdict, int] = dict.fromkeys(Verdict, 0)
    for c in counts:
        for v, n in c.items():
            total[v] += n
    return total


def run_result(outcomes: Iterable[CaseOutcome], verdicts: Mapping[Verdict, int]) -> RunResult:
    """Inconclusive when infrastructure noise is over the evidence limit; else red on any fail."""
    outcomes = list(outcomes)
    if non_content_share(verdicts) > MAX_NON_CONTENT_SHARE:
        return RunResult.INCONCLUSIVE
    if CaseOutcome.FAIL in outcomes:
        return RunResult.RED
    if CaseOutcome.INCONCLUSIVE in outcomes:
        return RunResult.INCONCLUSIVE
    return RunResult.GREEN


def too_noisy(verdicts: Mapping[Verdict, int]) -> str | None:
    """Why a run's samples say too little about the content to judge it, or None.

    Truncated and transport samples never tested the content; over the limit, the run
    is inconclusive whatever its cases show.
    """
    share = non_content_share(verdicts)
    if share <= MAX_NON_CONTENT_SHARE:
        return None
    return (
        f"{share:.0%} of samples are truncated or transport failures "
        f"(limit {MAX_NON_CONTENT_SHARE:.0%}), so the content was barely tested"
    )


def content_comparison_withheld(
    cases_evaluated: int, verdicts: Mapping[Verdict, int]
) -> str | None:
    """Why a run's content cannot be compared (content diffs need enough evidence), or None."""
    reasons = []
    if cases_evaluated < MIN_CASES_FOR_CONTENT:
        reasons.append(
            f"only {cases_evaluated} case(s) evaluated: with fewer than {MIN_CASES_FOR_CONTENT}, "
            "a content comparison would be noise"
        )
    noisy = too_noisy(verdicts)
    if noisy is not None:
        reasons.append(noisy)
    return "; ".join(reasons) if reasons else None
