"""Step 1's verdict: does the case fail on the unchanged prompt too?

Exactly one of three sentences, decided from the rerun's own pass bar and a one-sided
Fisher test that the unchanged prompt passes more often than the current one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from redline.records import CaseOutcome, CaseRecord
from redline.stats import fisher_one_sided, wilson_interval

SIGNIFICANCE = 0.05


class Conclusion(StrEnum):
    CASE_AT_FAULT = (
        "fails on the unchanged prompt too: the case or its assertion is at fault, not your change"
    )
    REGRESSION = "passes on the unchanged prompt: your change regressed it"
    UNDECIDED = "not enough evidence: run more samples"


@dataclass(frozen=True)
class Rate:
    passes: int
    samples: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.passes / self.samples if self.samples else 0.0

    def describe(self) -> str:
        return (
            f"{self.passes}/{self.samples} = {self.value:.0%} "
            f"(95% CI {self.low:.0%}–{self.high:.0%})"
        )


@dataclass(frozen=True)
class RerunComparison:
    current: Rate
    unchanged: Rate
    p_value: float
    conclusion: Conclusion


def rate_of(case: CaseRecord) -> Rate:
    """Pass rate over content samples: transport and truncation say nothing about content."""
    n = case.content_samples
    low, high = wilson_interval(case.passes, n)
    return Rate(case.passes, n, low, high)


def compare_rerun(current: CaseRecord, rerun: CaseRecord) -> RerunComparison:
    """Failing its own bar on the unchanged prompt clears your change; passing it, with a
    significantly higher rate than the current prompt, convicts it; anything else is noise."""
    a, b = rate_of(rerun), rate_of(current)
    p_value = fisher_one_sided(a.passes, a.samples, b.passes, b.samples, "greater")
    if rerun.result is CaseOutcome.FAIL:
        conclusion = Conclusion.CASE_AT_FAULT
    elif rerun.result is CaseOutcome.PASS and p_value < SIGNIFICANCE:
        conclusion = Conclusion.REGRESSION
    else:
        conclusion = Conclusion.UNDECIDED
    return RerunComparison(current=b, unchanged=a, p_value=p_value, conclusion=conclusion)
