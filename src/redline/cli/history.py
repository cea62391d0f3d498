"""`redline history CASE_ID`: the case's pass counts across runs, and whether it is marginal."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from redline.cli.output import add_format_option, make_console, make_table, print_json
from redline.cli.show import require_store
from redline.config import load_config
from redline.deciding.history import (
    DEFAULT_MARGINAL_RUNS,
    CaseHistory,
    HistoryPoint,
    Marginal,
    case_history,
    find_marginal,
    sparkline,
)
from redline.errors import UsageError
from redline.presentation import OUTCOME_STYLES
from redline.running.store import RunStore
from redline.textsafe import escape_output

_RESULT_STYLE = OUTCOME_STYLES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "history",
        description="Print one case's pass counts across the stored runs, oldest first, with "
        "a sparkline; reruns and replays are listed apart, model and case-file changes are "
        "marked, and a case that sat within one sample of its bar is called marginal, with "
        "the samples that would settle it.",
    )
    parser.add_argument(
        "case_id", metavar="CASE_ID", help="the case id (as in its case file), or SUITE/CASE"
    )
    parser.add_argument("--suite", default=None, help="the suite, when the id is in several")
    parser.add_argument(
        "--marginal-runs",
        type=int,
        default=DEFAULT_MARGINAL_RUNS,
        metavar="K",
        help="consecutive runs at the edge that make a case marginal "
        f"(default {DEFAULT_MARGINAL_RUNS})",
    )
    add_format_option(parser)
    parser.set_defaults(handler=_history)


def _history(args: argparse.Namespace) -> int:
    if args.marginal_runs < 1:
        raise UsageError("--marginal-runs must be at least 1")
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        history = case_history(store, args.case_id, args.suite)
    marginal = find_marginal(history.scheduled, args.marginal_runs)
    if args.format == "json":
        print_json(_history_json(history, marginal))
    else:
        print_history(make_console(), history, marginal)
    return 0


def _point_json(p: HistoryPoint) -> dict[str, Any]:
    return asdict(p) | {"kind": str(p.kind), "result": str(p.result), "rate": p.rate}


def _history_json(history: CaseHistory, marginal: Marginal | None) -> dict[str, Any]:
    return {
        "suite": history.suite,
        "case_id": history.case_id,
        "scheduled": [_point_json(p) for p in history.scheduled],
        "reruns": [_point_json(p) for p in history.reruns],
        "marginal": None if marginal is None else asdict(marginal) | {"rate": marginal.rate},
    }


def _table(title: str, points: Sequence[HistoryPoint], kinds: bool) -> Table:
    columns = ["run", "started", "model", "passes", "required", "result", "case hash", "marks"]
    if kinds:
        columns.insert(1, "kind / parent")
    table = make_table(
        columns, title=title, right=("passes", "required"), whole=("run",), show_edge=False
    )
    for p in points:
        marks = []
        if p.model_changed:
            marks.append("model changed")
        if p.case_changed:
            marks.append("case changed")
        row: list[Text | str] = [
            p.run_id,
            p.started_at[:19].replace("T", " "),
            Text(escape_output(p.model_id), style="bold" if p.model_changed else ""),
            f"{p.passes}/{p.samples}",
            str(p.required),
            Text(str(p.result), style=_RESULT_STYLE[p.result]),
            Text(p.case_hash[:10], style="bold" if p.case_changed else ""),
            Text(", ".join(marks), style="yellow"),
        ]
        if kinds:
            row.insert(1, f"{p.kind} of {p.parent_id}" if p.parent_id else str(p.kind))
        table.add_row(*row)
    return table


def print_history(console: Console, history: CaseHistory, marginal: Marginal | None) -> None:
    name = escape_output(f"{history.suite}/{history.case_id}")
    console.print(Text(f"case {name}: {len(history.scheduled)} scheduled run(s)", style="bold"))
    if history.scheduled:
        console.print(_table("scheduled runs (oldest first)", history.scheduled, kinds=False))
        line = sparkline([p.rate for p in history.scheduled])
        console.print(Text(f"pass rate  {line}  (▁ 0% … █ 100%, oldest → newest)"))
    if history.reruns:
        console.print(_table("reruns and replays (kept apart)", history.reruns, kinds=True))
    if marginal is None:
        console.print(Text("not marginal"))
        return
    console.print(
        Text(
            f"marginal: within one sample of its required count for {marginal.runs} consecutive "
            f"runs since {marginal.since[:10]} (pooled {marginal.pooled_passes}/"
            f"{marginal.pooled_samples} = {marginal.rate:.0%}, bar {marginal.threshold:.0%})",
            style="yellow",
        )
    )
    if marginal.samples_needed is None:
        console.print(
            Text("its rate sits on the bar: no sample count separates them; retire or rewrite it")
        )
    else:
        console.print(
            Text(
                f"samples needed for a 95% Wilson interval that excludes the bar: "
                f"{marginal.samples_needed} per run; raise `samples` or retire the case"
            )
        )
