"""The case a rerun or a case action works on, as the files on disk describe it now."""

from __future__ import annotations

from redline.config import Config
from redline.errors import CaseNotFound
from redline.suite.cases import Case, Suite, load_suites

#: Raising a case's samples suggests at least this many (or 4× the current, if more).
MIN_RERUN_SAMPLES = 20


#: A count its history asks for beyond this many times the current one is not worth
#: running on every run: the case is better retired.
MAX_RAISE_FACTOR = 10


def default_samples(run_samples: int) -> int:
    return max(MIN_RERUN_SAMPLES, 4 * run_samples)


def suggested_samples(samples: int, needed: int | None) -> tuple[int, str]:
    """The count to offer when raising a case's samples, and why.

    What its history needs to decide it, rounded up to a multiple of the current count
    (so the same rate bar is a whole number of passes); when that is more than a team
    would run every time, the usual raise, with a word that retiring may be the answer.
    """
    usual = default_samples(samples)
    if needed is None:
        return usual, ""
    if needed > MAX_RAISE_FACTOR * samples and needed > usual:
        return usual, (
            f"Its history would need about {needed} samples to decide it — more than is "
            f"worth running each time; {usual} tightens it, or retire it (t) with a reason."
        )
    rounded = max(usual, -(-needed // samples) * samples)
    return rounded, f"Its history suggests about {needed} to decide it."


def find_case(config: Config, suite_name: str, case_id: str) -> tuple[Suite, Case]:
    """The suite and case as the files on disk describe them now."""
    for suite in load_suites(config.suites, config):
        if suite.name == suite_name:
            try:
                return suite, suite.case(case_id)
            except KeyError:
                break
    raise CaseNotFound(
        f"case {suite_name}/{case_id} is not in the suites of {config.source.name} any more "
        "(retired, renamed or deleted)"
    )
