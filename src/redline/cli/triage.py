"""`redline triage [RUN_ID]`: open the triage app on a run (default: the latest run).

Textual is imported only when the command runs, so the engine and every other command
stay free of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.cli import ExitCode
from redline.cli.terminal import require_terminal
from redline.config import load_config
from redline.errors import UsageError
from redline.records import RunKind
from redline.store import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "triage",
        help="walk a red run case by case: rerun, outputs, history",
        description="Open the triage app on RUN_ID (default: the latest run; the runs screen, "
        "key R, switches between runs). Needs a terminal. Per failing case: rerun on the "
        "unchanged prompt, read the raw outputs, read the pass-count history; then raise "
        "samples, retire, loosen or accept a baseline.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", nargs="?", help="run id or unique prefix")
    parser.add_argument(
        "--store", type=Path, default=None, help="store file (default: from the config)"
    )
    parser.set_defaults(handler=_triage)


def _triage(args: argparse.Namespace) -> int:
    config = load_config()
    store_path: Path = args.store or config.store_path
    if not store_path.is_file():
        raise UsageError(f"no store at {store_path}: run `redline run` first")
    from redline_tui.app import TriageApp
    from redline_tui.context import TriageContext

    with RunStore.open(store_path) as store:
        if args.run_id is not None:
            run_id: str | None = store.run(args.run_id).id
        elif store.latest_run(kind=RunKind.RUN) is None:
            raise UsageError(f"no runs in {store_path}: run `redline run` first")
        else:
            run_id = None
        require_terminal(
            "triage",
            "`redline show RUN_ID CASE --diff` prints a case's outputs against its golden "
            "answer, `redline compare A B` compares two runs, `redline history CASE` shows a "
            "case's history.",
        )
        TriageApp(TriageContext(store=store, root=config.root, config=config), run_id).run()
    return ExitCode.GREEN
