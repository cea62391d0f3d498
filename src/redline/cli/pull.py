"""`redline pull`: import the runs that CI stored as artifacts into the local store.

Heavy modules (the HTTP client, the CI provider) load only when the command runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from redline.ci.scaffold import WORKFLOW_FILE
from redline.cli import ExitCode
from redline.config import Config, load_config
from redline.errors import UsageError
from redline.running.store import RunStore

if TYPE_CHECKING:
    from redline.ci.provider import CiArtifact
    from redline.ci.pull import PullSummary

#: Without --last or --since, a pull looks at this many of the newest CI runs.
DEFAULT_LAST = 30
DEFAULT_WORKFLOW = WORKFLOW_FILE.rsplit("/", 1)[-1]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "pull",
        description="List the workflow's finished runs on GitHub Actions, download the "
        "artifacts holding `redline export`s (results.json + samples.jsonl) and import every "
        "run the local store lacks. Running it again imports nothing twice. Token from "
        "GITHUB_TOKEN or GH_TOKEN, else `gh auth token`; API from GITHUB_API_URL.",
    )
    add_pull_arguments(parser)
    parser.set_defaults(handler=_pull)


def add_pull_arguments(parser: argparse._ActionsContainer) -> None:
    """The options saying what to pull, shared by `pull` and `triage --pull`."""
    parser.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="the GitHub repository (default: GITHUB_REPOSITORY, else the origin remote)",
    )
    parser.add_argument(
        "--workflow",
        default=DEFAULT_WORKFLOW,
        metavar="FILE",
        help=f"the workflow file in .github/workflows/ (default {DEFAULT_WORKFLOW}, the one "
        "`redline init` writes)",
    )
    parser.add_argument(
        "--branch", metavar="NAME", help="runs of this branch (default: the default branch)"
    )
    parser.add_argument(
        "--last",
        type=int,
        metavar="N",
        help=f"the N newest finished CI runs (default {DEFAULT_LAST} without --since)",
    )
    parser.add_argument(
        "--since",
        type=_date,
        metavar="YYYY-MM-DD",
        help="CI runs started on or after this day (UTC)",
    )
    parser.add_argument(
        "--artifact",
        action="append",
        default=[],
        metavar="GLOB",
        help="only artifacts whose name matches (repeatable; default: every artifact)",
    )
    parser.add_argument(
        "--rate-limit-wait",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="wait out a used-up API rate limit when it resets within this time, else stop "
        "(default 300)",
    )


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write the day as YYYY-MM-DD") from None


def _pull(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(config.store_path) as store:
        summary = pull_from_ci(
            args, config, store, Console(stderr=True, soft_wrap=True, highlight=False)
        )
    return ExitCode.GREEN if summary.complete else ExitCode.USAGE


def pull_from_ci(
    args: argparse.Namespace, config: Config, store: RunStore, console: Console
) -> PullSummary:
    """Run a pull as the command line asked; prints progress and the summary to `console`."""
    from redline.ci.github import GitHubActions, api_url, resolve_repo, resolve_token
    from redline.ci.provider import RunQuery
    from redline.ci.pull import pull

    if args.last is not None and args.last < 1:
        raise UsageError("--last must be at least 1")
    if args.rate_limit_wait < 0:
        raise UsageError("--rate-limit-wait must be 0 or more seconds")
    last = args.last if args.last is not None or args.since is not None else DEFAULT_LAST
    query = RunQuery(workflow=args.workflow, branch=args.branch, last=last, since=args.since)
    repo = resolve_repo(args.repo, config.root)
    api = api_url()
    token = resolve_token(api)
    if token is None:
        console.print(
            Text(
                "no GitHub token (GITHUB_TOKEN, GH_TOKEN or `gh auth token`): public runs can "
                "be listed, but downloading artifacts needs one",
                style="yellow",
            )
        )
    with (
        GitHubActions(repo, token, api, rate_limit_wait_s=args.rate_limit_wait) as provider,
        _Progress(console, f"{repo} {query.workflow}") as progress,
    ):
        summary = pull(store, provider, query, artifacts=args.artifact, progress=progress)
    _print_summary(console, summary, store)
    if summary.ci_runs == 0 and summary.stopped is None:
        branch = f"branch {query.branch}" if query.branch else "the default branch"
        console.print(
            Text(
                f"no finished run of {query.workflow} on {branch} of {repo}"
                + (f" since {query.since}" if query.since else "")
                + ": check --workflow, --branch and --since, or whether the workflow ran yet"
            )
        )
    return summary


class _Progress:
    """A bar on a terminal; one line per artifact in CI logs and pipes."""

    def __init__(self, console: Console, title: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._console = console
        self._title = title
        self._live = console.is_terminal
        self._progress = Progress(
            TextColumn("[bold]pull[/bold] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console,
            transient=True,
            disable=not self._live,
        )
        self._task = self._progress.add_task(f"{title}: listing runs", total=None)
        self._done = 0
        self._total = 0

    def __enter__(self) -> _Progress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def listed(self, runs: int) -> None:
        self._progress.update(self._task, description=f"{self._title}: listed {runs} CI run(s)")

    def downloading(self, total: int) -> None:
        self._total = total
        self._progress.update(
            self._task, description=f"{self._title}: artifacts", total=total, completed=0
        )
        if not self._live:
            self._console.print(Text(f"{total} artifact(s) to download from {self._title}"))

    def downloaded(self, artifact: CiArtifact, note: str) -> None:
        self._done += 1
        self._progress.advance(self._task)
        if not self._live:
            self._console.print(
                Text(f"  {self._done}/{self._total} {artifact.name} ({artifact.id}): {note}")
            )


def _print_summary(console: Console, summary: PullSummary, store: RunStore) -> None:
    parts = [f"{summary.ci_runs} CI run(s) looked at", f"{len(summary.imported)} run(s) imported"]
    counts = (
        (summary.already_pulled, "artifact(s) pulled before"),
        (summary.already_stored, "run(s) already in the store"),
        (summary.superseded, "shard run(s) kept out (their merged run is imported)"),
        (summary.expired, "expired artifact(s) skipped"),
        (summary.not_exports, "artifact(s) without a redline export"),
        (len(summary.failed), "artifact(s) failed"),
    )
    parts += [f"{n} {what}" for n, what in counts if n]
    console.print(Text("pull: " + ", ".join(parts)))
    origins = store.ci_origins([r.id for r in summary.imported])
    for run in sorted(summary.imported, key=lambda r: r.started_at)[-5:]:
        origin = origins.get(run.id)
        line = (
            f"  run {run.id}  {run.started_at[:16].replace('T', ' ')}  {run.result or run.status}"
        )
        if origin is not None:
            line += f"  {origin.label}  {origin.url}"
        console.print(Text(line))
    if len(summary.imported) > 5:
        console.print(Text(f"  … and {len(summary.imported) - 5} older (see `redline runs`)"))
    for failure in summary.failed:
        console.print(Text(f"failed: {failure}", style="red"))
    if summary.failed:
        console.print(
            Text("the runs imported are kept; run `redline pull` again to retry the failed ones")
        )
    if summary.stopped:
        console.print(Text(f"redline: error: {summary.stopped}", style="red"))


def latest_nightly(store: RunStore) -> str | None:
    """The run `triage --pull` opens: the newest pulled scheduled run, else the newest pulled."""
    run = store.latest_pulled_run(event="schedule") or store.latest_pulled_run()
    return None if run is None else run.id
