"""Score drops that matter: toward the assertion's threshold in the score's own units."""

from __future__ import annotations

from redline.deciding.baseline import score_drops
from redline.pytest_plugin import compare_baseline


def test_a_near_zero_not_mentions_score_rising_a_little_is_not_a_drop() -> None:
    limits = {"0:not-mentions": 0.5}
    assert score_drops({"0:not-mentions": 0.099}, {"0:not-mentions": 0.125}, 0.10, limits) == []
    # 10% of the way to the worst score (1.0) is 0.09: a rise of 0.101 counts.
    drops = score_drops({"0:not-mentions": 0.099}, {"0:not-mentions": 0.2}, 0.10, limits)
    assert [d.key for d in drops] == ["0:not-mentions"]


def test_crossing_the_threshold_always_counts() -> None:
    drops = score_drops({"0:mentions": 0.52}, {"0:mentions": 0.49}, 0.10, {"0:mentions": 0.5})
    assert len(drops) == 1 and drops[0].crossed
    assert "across its threshold 0.5" in str(drops[0])


def test_a_judge_drop_is_measured_from_the_bottom_of_its_scale() -> None:
    limits = {"1:judge": 3.0}
    assert score_drops({"1:judge": 4.5}, {"1:judge": 4.2}, 0.10, limits) == []  # 0.3 < 0.35
    assert len(score_drops({"1:judge": 4.5}, {"1:judge": 4.1}, 0.10, limits)) == 1


def test_pytest_and_baseline_compare_share_the_rule() -> None:
    baseline = {
        "t::not-mentions::lawsuit": {
            "status": "passed",
            "score": 0.099,
            "threshold": 0.5,
            "assertion": "not-mentions",
        }
    }
    current = {
        "t::not-mentions::lawsuit": {
            "status": "passed",
            "score": 0.125,
            "threshold": 0.5,
            "assertion": "not-mentions",
        }
    }
    assert compare_baseline(baseline, current, 0.10) == ([], [])
    current["t::not-mentions::lawsuit"]["score"] = 0.55
    regressions, _ = compare_baseline(baseline, current, 0.10)
    assert regressions == [
        "t::not-mentions::lawsuit: score 0.099 → 0.550 (+456%, +0.451 across its threshold 0.5)"
    ]
