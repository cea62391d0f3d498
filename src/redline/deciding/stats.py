"""Pass counts as evidence: intervals, significance of a drop, samples needed.

Pure Python (no scipy at runtime). A case's result is a count out of N samples, so
every question about it is a question about a binomial proportion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist
from typing import Literal

Alternative = Literal["greater", "less"]

#: Upper bound of the search in `samples_needed`; beyond it the answer is "never, in practice".
MAX_SAMPLES = 100_000


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there are no trials.

    `successes` may be fractional so the interval around an observed *rate* can be
    evaluated at a hypothetical sample count.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return (0.0, 1.0)
    z = _z(confidence)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def fisher_one_sided(
    passes_a: int,
    samples_a: int,
    passes_b: int,
    samples_b: int,
    alternative: Alternative = "greater",
) -> float:
    """One-sided Fisher exact p-value for the 2×2 table [[a, n_a − a], [b, n_b − b]].

    `greater`: evidence that A's pass rate exceeds B's (B dropped); `less`: the reverse.
    Same convention as `scipy.stats.fisher_exact(table, alternative=...)`; exact
    hypergeometric sums over integers, so no rounding until the final division.
    """
    for passes, samples in ((passes_a, samples_a), (passes_b, samples_b)):
        if samples < 0 or not 0 <= passes <= samples:
            raise ValueError(f"need 0 <= passes <= samples, got {passes}/{samples}")
    total = samples_a + samples_b
    successes = passes_a + passes_b
    if total == 0:
        return 1.0
    low = max(0, successes - samples_b)
    high = min(successes, samples_a)
    if alternative == "greater":
        xs = range(passes_a, high + 1)
    elif alternative == "less":
        xs = range(low, passes_a + 1)
    else:
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")
    tail = sum(math.comb(samples_a, x) * math.comb(samples_b, successes - x) for x in xs)
    return min(1.0, tail / math.comb(total, successes))


def samples_needed(
    rate: float, threshold: float, confidence: float = 0.95, limit: int = MAX_SAMPLES
) -> int | None:
    """Fewest samples at which a Wilson interval around `rate` excludes `threshold`.

    None when no count up to `limit` would do it: in particular when the observed rate
    sits exactly on the threshold (more samples cannot separate a rate from itself).
    """
    if not 0.0 <= rate <= 1.0 or not 0.0 <= threshold <= 1.0:
        raise ValueError("rate and threshold must be fractions in [0, 1]")
    if math.isclose(rate, threshold, abs_tol=1e-12):
        return None

    def excludes(n: int) -> bool:
        lo, hi = wilson_interval(rate * n, n, confidence)
        return threshold < lo or threshold > hi

    return smallest_count(excludes, 0, limit)


def smallest_count(holds: Callable[[int], bool], after: int, limit: int) -> int | None:
    """The smallest n in (after, limit] for which `holds(n)`, or None.

    For a condition that stays true once it is true (more samples only add evidence):
    doubling to bracket it, then bisection, so a count of thousands costs a few dozen calls.
    """
    low, n = after, max(after + 1, 2 * after)
    while n < limit and not holds(n):
        low, n = n, n * 2
    if n >= limit:
        n = limit
        if n <= low or not holds(n):
            return None
    while n - low > 1:
        mid = (low + n) // 2
        if holds(mid):
            n = mid
        else:
            low = mid
    return n


def difference_interval(
    passes_a: int, samples_a: int, passes_b: int, samples_b: int, confidence: float = 0.90
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for rate A − rate B (built from two Wilson intervals).

    Unlike the textbook normal interval it does not collapse to a point when both rates
    are 0 or 1, so two arms that both failed every sample are not "the same" after one
    sample each. An equivalence test within a margin m (two one-sided tests at level α)
    holds when the (1 − 2α) interval lies inside (−m, m).
    """
    if samples_a == 0 or samples_b == 0:
        return (-1.0, 1.0)
    pa, pb = passes_a / samples_a, passes_b / samples_b
    la, ua = wilson_interval(passes_a, samples_a, confidence)
    lb, ub = wilson_interval(passes_b, samples_b, confidence)
    d = pa - pb
    low = d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    high = d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    return (max(-1.0, low), min(1.0, high))


def at_least(samples: int, required: int, rate: float) -> float:
    """P(at least `required` of `samples` pass) when each passes with probability `rate`:
    how often a case with that pass rate clears its bar in one run."""
    if required <= 0:
        return 1.0
    if required > samples:
        return 0.0
    return sum(
        math.comb(samples, k) * rate**k * (1.0 - rate) ** (samples - k)
        for k in range(required, samples + 1)
    )
