"""Step 1's rerun: the failing case against the prompt as it was at a base revision.

The prompt is read from git's object store (never by checking anything out), and the
rerun is stored as its own `rerun` run linked to the red run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from redline.cases import Case, Suite, load_suites
from redline.config import Config
from redline.errors import UsageError
from redline.gitio import GitError, file_at, merge_base_with_default, open_repo, repo_path
from redline.records import RunKind, RunRecord
from redline.store import RunStore

if TYPE_CHECKING:
    from redline.runner import ProgressCallback

#: A rerun takes at least this many samples (or 4× the red run's, if more).
MIN_RERUN_SAMPLES = 20


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
    """The suite with its prompt files read at `rev`; the cases stay as they are now."""
    texts: list[str] = []
    with open_repo(root) as repo:
        for path in suite.prompt_files:
            data = file_at(repo, rev, repo_path(repo, path))
            if data is None:
                raise UsageError(f"prompt file {path.name} does not exist at revision {rev}")
            texts.append(data.decode("utf-8"))
    system = texts[0] if texts else suite.system_template
    user = texts[1] if len(texts) > 1 else suite.user_template
    return dataclasses.replace(suite, system_template=system, user_template=user)


def run_rerun(
    store: RunStore,
    config: Config,
    suite: Suite,
    case: Case,
    parent: RunRecord,
    samples: int,
    rev: str,
    progress: ProgressCallback,
    cancelled: Callable[[], bool],
) -> RunRecord:
    """Run the case `samples` times (blocking; call from a worker thread).

    Cancellation is polled: when `cancelled()` turns true the run stops and is stored as
    interrupted, and `asyncio.CancelledError` propagates. The runner (and with it every
    provider client) is imported here, so opening the app does not pay for it.
    """
    from redline.runner import RunOptions, execute_run

    options = RunOptions(
        samples=samples,
        case_ids=(case.id,),
        kind=RunKind.RERUN,
        parent_id=parent.id,
        args={"triage": True, "revision": rev, "samples": samples},
    )

    async def _main() -> RunRecord:
        task = asyncio.ensure_future(execute_run([suite], config, store, options, progress))
        while not task.done():
            if cancelled():
                task.cancel()
                break
            await asyncio.wait({task}, timeout=0.1)
        return await task

    return asyncio.run(_main())
