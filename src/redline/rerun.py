"""Triage step 1: rerun a failing case against the unchanged prompt, and say what it means.

The prompt is read from git's object store at a base revision (never by checking
anything out), the rerun is stored as its own `rerun` run linked to the red run, and
`compare_rerun` turns the two pass rates into exactly one of three conclusions
(DESIGN rule 11). The CLI (`redline rerun`) and the triage app both use this module.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from redline.budget import Estimate, estimate_run
from redline.cases import Case, Suite, load_suites
from redline.config import Config
from redline.errors import UsageError
from redline.gitio import GitError, file_at, merge_base_with_default, open_repo, repo_path
from redline.records import CaseOutcome, CaseRecord, RunKind, RunRecord
from redline.stats import fisher_one_sided, wilson_interval
from redline.store import RunStore
from redline.yamlsource import FILE_REF

if TYPE_CHECKING:
    from redline.runner import ProgressCallback, RunOptions

#: A rerun takes at least this many samples (or 4× the red run's, if more).
MIN_RERUN_SAMPLES = 20
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


def default_samples(run_samples: int) -> int:
    return max(MIN_RERUN_SAMPLES, 4 * run_samples)


def default_revision(root: Path) -> tuple[str, str]:
    """(revision, why): the merge-base of HEAD with the default branch, else HEAD."""
    try:
        with open_repo(root) as repo:
            base = merge_base_with_default(repo)
    except GitError:
        return "HEAD", "not inside a git repository: using HEAD"
    if base is None:
        return "HEAD", "no default branch found: using HEAD"
    return base[:12], "merge-base of HEAD with the default branch"


def find_case(config: Config, suite_name: str, case_id: str) -> tuple[Suite, Case]:
    """The suite and case as the files on disk describe them now."""
    for suite in load_suites(config.suites, config):
        if suite.name == suite_name:
            try:
                return suite, suite.case(case_id)
            except KeyError:
                break
    raise UsageError(
        f"case {suite_name}/{case_id} is not in the suites of {config.source.name} any more "
        "(retired, renamed or deleted)"
    )


def suite_at_revision(suite: Suite, root: Path, rev: str) -> Suite:
    """The suite with its prompt (system file and user template) as they were at `rev`.

    The cases stay as they are now: the question is whether the *prompt* change broke
    them. An inline user template is read from suite.yaml at `rev` too.
    """
    with open_repo(root) as repo:

        def read(path: Path) -> str:
            data = file_at(repo, rev, repo_path(repo, path))
            if data is None:
                raise UsageError(f"{path.name} does not exist at revision {rev}")
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise UsageError(f"{path.name} at revision {rev} is not UTF-8 text") from None

        try:
            spec: Any = yaml.safe_load(read(suite.path / "suite.yaml"))
        except yaml.YAMLError as exc:
            raise UsageError(f"suite.yaml of {suite.name} at revision {rev}: {exc}") from None
        prompt = spec.get("prompt") if isinstance(spec, dict) else None
        if not isinstance(prompt, dict):
            raise UsageError(f"suite.yaml of {suite.name} at revision {rev} has no prompt")

        def text(value: object, inline: bool) -> str:
            if not isinstance(value, str) or not value:
                raise UsageError(f"suite.yaml of {suite.name} at revision {rev}: bad prompt entry")
            if inline and not value.startswith(FILE_REF):
                return value
            return read(suite.path / value.removeprefix(FILE_REF))

        system = text(prompt.get("system"), inline=False)
        user = text(prompt.get("user"), inline=True)
    return dataclasses.replace(suite, system_template=system, user_template=user)


def rerun_options(parent: RunRecord, case: Case, samples: int, rev: str) -> RunOptions:
    """The run options of a triage rerun of `case` from the run `parent`."""
    from redline.runner import RunOptions

    return RunOptions(
        samples=samples,
        case_ids=(case.id,),
        kind=RunKind.RERUN,
        parent_id=parent.id,
        model_alias=parent.model_alias if parent.kind is not RunKind.REPLAY else None,
        args={"triage": True, "revision": rev, "samples": samples, "case": case.id},
    )


def estimate_rerun(
    store: RunStore, config: Config, suite: Suite, case: Case, parent: RunRecord, samples: int
) -> Estimate:
    """What a rerun will cost, before it starts (the CLI and the app print it)."""
    return estimate_run([suite], config, store, rerun_options(parent, case, samples, "HEAD"))


def run_rerun(
    store: RunStore,
    config: Config,
    suite: Suite,
    case: Case,
    parent: RunRecord,
    samples: int,
    rev: str,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    budget: float | None = None,
) -> RunRecord:
    """Run the case `samples` times against `suite` (blocking; call from a worker thread).

    Cancellation is polled: when `cancelled()` turns true the run stops and is stored as
    interrupted, and `asyncio.CancelledError` propagates. The runner (and with it every
    provider client) is imported here, so opening the triage app does not pay for it.
    """
    from redline.runner import execute_run

    options = rerun_options(parent, case, samples, rev)
    if budget is not None:
        options = dataclasses.replace(options, budget=budget)

    async def _main() -> RunRecord:
        task = asyncio.ensure_future(execute_run([suite], config, store, options, progress))
        while not task.done():
            if cancelled():
                task.cancel()
                break
            await asyncio.wait({task}, timeout=0.1)
        return await task

    return asyncio.run(_main())
