"""`redline runs`: the stored runs, newest first."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.text import Text

from redline.cli.output import add_format_option, make_console, make_table, print_json
from redline.config import load_config
from redline.presentation import RESULT_STYLES
from redline.running.exchange import run_json
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunKind, RunRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "runs",
        description="List the runs in the local store, newest first: id, start time, kind "
        "(run, rerun, replay; with its parent), status, result, case counts, model and git "
        "commit. Copy an id into `redline show`, `compare` or `triage`.",
    )
    parser.add_argument(
        "--limit", type=int, default=20, metavar="N", help="at most N runs (default 20; 0: all)"
    )
    parser.add_argument("--kind", choices=[str(k) for k in RunKind], help="only runs of this kind")
    add_format_option(parser)
    parser.set_defaults(handler=_runs)


def _runs(args: argparse.Namespace) -> int:
    config = load_config()
    console = make_console()
    if not config.store_path.exists():  # a read never creates a store
        if args.format == "json":
            print_json({"runs": []})
        else:
            console.print(Text(f"no runs stored in {config.store_path}"))
        return 0
    with RunStore.open(config.store_path) as store:
        runs = store.runs(
            limit=args.limit if args.limit > 0 else None,
            kind=RunKind(args.kind) if args.kind else None,
        )
        origins = store.ci_origins([r.id for r in runs])
        if args.format == "json":
            print_json(
                {
                    "runs": [
                        _run_summary(run, store.cases(run.id))
                        | {"ci": asdict(origins[run.id]) if run.id in origins else None}
                        for run in runs
                    ]
                }
            )
            return 0
        if not runs:
            console.print(Text(f"no runs stored in {config.store_path}"))
            return 0
        columns = ("run", "started", "kind", "status", "result", "cases", "model", "git")
        table = make_table(columns + (("ci",) if origins else ()), whole=("run",))
        for run in runs:
            cases = store.cases(run.id)
            counts = Counter(c.result for c in cases)
            kind = str(run.kind) + (f" of {run.parent_id}" if run.parent_id else "")
            commit = (run.git_commit or "-")[:10] + ("+dirty" if run.git_dirty else "")
            row = [
                Text(run.id, style="cyan"),
                Text(run.started_at[:19].replace("T", " ")),
                Text(kind),
                Text(str(run.status)),
                Text(str(run.result or "-"), style=RESULT_STYLES[run.result] if run.result else ""),
                Text(_case_counts(counts, len(cases))),
                Text(run.model_id),
                Text(commit),
            ]
            if origins:
                origin = origins.get(run.id)
                # The label links to the CI run where the terminal supports links.
                row.append(Text(origin.label, style=f"link {origin.url}") if origin else Text("-"))
            table.add_row(*row)
        console.print(table)
    return 0


def _run_summary(run: RunRecord, cases: Sequence[CaseRecord]) -> dict[str, Any]:
    counts = Counter(c.result for c in cases)
    return run_json(run) | {
        "cases": len(cases),
        "cases_passed": counts[CaseOutcome.PASS],
        "cases_failed": counts[CaseOutcome.FAIL],
        "cases_inconclusive": counts[CaseOutcome.INCONCLUSIVE],
    }


def _case_counts(counts: Counter[CaseOutcome], total: int) -> str:
    """`2/17 pass, 13 fail, 2 inconclusive`: never folds the undecided into either side."""
    parts = [f"{counts[CaseOutcome.PASS]}/{total} pass"]
    others = (CaseOutcome.FAIL, CaseOutcome.INCONCLUSIVE, CaseOutcome.MARGINAL)
    parts += [f"{counts[o]} {o}" for o in others if counts[o]]
    return ", ".join(parts)
