"""`redline triage [RUN_ID] [--pull]`: open the triage app on a run (default: the latest run).

With `--pull`, last nights' runs are imported from CI first and the latest nightly opens.

Textual is imported only when the command runs, so the engine and every other command
stay free of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from redline.apps import app
from redline.cli import ExitCode
from redline.cli.pull import add_pull_arguments, latest_nightly, pull_from_ci
from redline.cli.terminal import require_terminal
from redline.config import load_config
from redline.errors import CiError, StoreMissing, UsageError
from redline.running.store import RunStore
from redline.vocabulary.records import RunKind


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "triage",
        description="Open the triage app on RUN_ID (default: the latest run; the runs screen, "
        "key R, switches between runs). Needs a terminal. Per failing case: rerun on the "
        "unchanged prompt, read the raw outputs, read the pass-count history; then raise "
        "samples, retire, loosen or accept a baseline.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", nargs="?", help="run id or unique prefix")
    parser.add_argument(
        "--store", type=Path, default=None, help="store file (default: from the config)"
    )
    parser.add_argument(
        "--pull",
        action="store_true",
        help="first import last nights' runs from CI (as `redline pull`), then open the "
        "latest nightly run",
    )
    pulling = parser.add_argument_group("what --pull imports (as for `redline pull`)")
    add_pull_arguments(pulling)
    parser.set_defaults(handler=_triage)


def _require_terminal() -> None:
    require_terminal(
        "triage",
        "`redline show RUN_ID CASE --diff` prints a case's outputs against its golden "
        "answer, `redline compare A B` compares two runs, `redline history CASE` shows a "
        "case's history.",
    )


def _triage(args: argparse.Namespace) -> int:
    config = load_config()
    store_path: Path = args.store or config.store_path
    if not args.pull and not store_path.is_file():
        raise StoreMissing(
            store_path,
            "run `redline run` first, or `redline triage --pull` to start from CI's runs",
        )
    open_triage = app("triage")
    with RunStore.open(store_path) as store:
        notice = None
        run_id: str | None = None
        if args.pull:
            _require_terminal()  # before a pull from CI, not after it
            summary = pull_from_ci(
                args, config, store, Console(stderr=True, soft_wrap=True, highlight=False)
            )
            if not summary.complete:
                notice = summary.stopped or f"{len(summary.failed)} CI artifact(s) failed"
                notice = f"The pull from CI did not finish: {notice}"
            run_id = latest_nightly(store)
        if args.run_id is not None:
            run_id = store.run(args.run_id).id
        elif run_id is None and store.latest_run(kind=RunKind.RUN) is None:
            if args.pull and summary.stopped:
                raise CiError(summary.stopped)
            raise UsageError(f"no runs in {store_path}: run `redline run` first")
        _require_terminal()
        open_triage(store=store, config=config, run_id=run_id, notice=notice)
    return ExitCode.GREEN
