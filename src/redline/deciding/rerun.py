"""The case a rerun or a case action works on, as the files on disk describe it now."""

from __future__ import annotations

from redline.config import Config
from redline.errors import CaseNotFound
from redline.suite.cases import Case, Suite, load_suites

#: Raising a case's samples suggests at least this many (or 4× the current, if more).
MIN_RERUN_SAMPLES = 20


def default_samples(run_samples: int) -> int:
    return max(MIN_RERUN_SAMPLES, 4 * run_samples)


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
