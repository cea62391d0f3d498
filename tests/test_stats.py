"""Wilson intervals, one-sided Fisher p-values and samples needed, against known values."""

from __future__ import annotations

import pytest

from redline.deciding.stats import fisher_one_sided, samples_needed, wilson_interval

# Computed once with scipy.stats.fisher_exact([[a, na - a], [b, nb - b]], alternative=...).
FISHER_KNOWN = [
    # (a, na, b, nb), greater, less
    ((5, 5, 2, 5), 0.08333333333333333, 1.0),
    ((10, 10, 3, 10), 0.001547987616099071, 1.0),
    ((4, 5, 4, 5), 0.7777777777777778, 0.7777777777777778),
    ((0, 5, 5, 5), 1.0, 0.003968253968253969),
    ((18, 20, 11, 20), 0.015475152571926765, 0.9983289741354258),
    ((1, 3, 0, 3), 0.5, 1.0),
    ((7, 9, 2, 12), 0.00845439390331031, 0.9996291634062532),
    ((20, 20, 15, 20), 0.023562023562023564, 1.0),
]


@pytest.mark.parametrize(("table", "greater", "less"), FISHER_KNOWN)
def test_fisher_matches_scipy(
    table: tuple[int, int, int, int], greater: float, less: float
) -> None:
    a, na, b, nb = table
    assert fisher_one_sided(a, na, b, nb, "greater") == pytest.approx(greater, rel=1e-12)
    assert fisher_one_sided(a, na, b, nb, "less") == pytest.approx(less, rel=1e-12)


def test_fisher_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        fisher_one_sided(6, 5, 1, 5)


def test_wilson_known_values() -> None:
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(4, 5) == pytest.approx((0.3755, 0.9638), abs=1e-4)
    assert wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_narrows_with_confidence() -> None:
    lo95, hi95 = wilson_interval(8, 10, 0.95)
    lo80, hi80 = wilson_interval(8, 10, 0.80)
    assert lo95 < lo80 < 0.8 < hi80 < hi95


def test_samples_needed_is_the_smallest_count_that_excludes_the_bar() -> None:
    n = samples_needed(13 / 15, 0.8)
    assert n == 139
    lo, _ = wilson_interval(13 / 15 * n, n)
    assert lo > 0.8
    lo_before, _ = wilson_interval(13 / 15 * (n - 1), n - 1)
    assert lo_before <= 0.8


def test_samples_needed_below_the_bar_and_on_it() -> None:
    assert samples_needed(0.5, 0.8) == 7
    assert samples_needed(0.8, 0.8) is None
    assert samples_needed(0.8001, 0.8, limit=1000) is None
