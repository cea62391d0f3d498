"""A case's judged scores as a median with a bootstrap 95% interval.

One sample's score is noise; the median over a case's samples, with an
interval that says how much it could move, is what a report compares.
Resampling is seeded from the case, so the same scores give the same interval.
"""

from __future__ import annotations

import hashlib
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from redline.vocabulary.records import SampleRecord
from redline.vocabulary.verdicts import AssertionStatus

RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ScoreSummary:
    n: int
    median: float
    low: float
    high: float

    def describe(self) -> str:
        return f"median {self.median:g} (95% CI {self.low:g}–{self.high:g}, n {self.n})"


def summarize_scores(
    scores: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: str = "",
) -> ScoreSummary | None:
    """Median and percentile-bootstrap interval of the median; None without scores."""
    if not scores:
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    values = list(scores)
    median = float(statistics.median(values))
    if len(values) == 1 or len(set(values)) == 1:
        return ScoreSummary(len(values), median, median, median)
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    medians = sorted(
        float(statistics.median(rng.choices(values, k=len(values)))) for _ in range(resamples)
    )
    tail = (1.0 - confidence) / 2.0
    low = medians[int(tail * (resamples - 1))]
    high = medians[round((1.0 - tail) * (resamples - 1))]
    return ScoreSummary(len(values), median, low, high)


def case_score_summaries(
    samples: Iterable[SampleRecord],
) -> dict[tuple[str, str, int], ScoreSummary]:
    """Per (suite, case, assertion index) of a `judge` assertion: its scores summarised.

    Read from the stored per-sample judge results, so a run's summary is the same
    whenever it is computed.
    """
    scores: dict[tuple[str, str, int], list[float]] = {}
    for sample in samples:
        for result in sample.assertions:
            if result.type != "judge" or result.score is None:
                continue
            if result.status not in (AssertionStatus.PASSED, AssertionStatus.FAILED):
                continue
            scores.setdefault((sample.suite, sample.case_id, result.index), []).append(result.score)
    summaries: dict[tuple[str, str, int], ScoreSummary] = {}
    for key, values in sorted(scores.items()):
        summary = summarize_scores(values, seed="\x00".join(map(str, key)))
        if summary is not None:
            summaries[key] = summary
    return summaries
