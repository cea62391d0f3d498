"""`redline compare RUN_A RUN_B`: per-case deltas for a model migration or a prompt change.

Exit codes: 3 when the content comparison is withheld for lack of evidence, 1 when at least one case
dropped significantly from A to B (one-sided Fisher p < 0.05), 0 otherwise.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table
from rich.text import Text

from redline.cli import ExitCode
from redline.compare import Comparison, compare_runs
from redline.config import load_config
from redline.errors import UsageError
from redline.store import RunStore
from redline.textsafe import escape_output
from redline.verdicts import VERDICT_ORDER, Verdict


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("compare", help="compare two runs case by case (A → B)")
    parser.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. current model)")
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate run")
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    config = load_config()
    if not config.store_path.exists():
        raise UsageError(f"no run store at {config.store_path}; run `redline run` first")
    with RunStore.open(config.store_path) as store:
        result = compare_runs(store, args.run_a, args.run_b)
    print_comparison(Console(), result)
    if result.withheld:
        return ExitCode.INCONCLUSIVE
    return ExitCode.RED if result.significant_drops else ExitCode.GREEN


def _delta_text(delta: dict[Verdict, int]) -> str:
    return " ".join(f"{v} {n:+d}" for v, n in delta.items() if n)


def _p(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def print_comparison(console: Console, c: Comparison) -> None:
    for label, side in (("A", c.a), ("B", c.b)):
        run = side.run
        commit = (run.git_commit or "no commit")[:12] + (" dirty" if run.git_dirty else "")
        console.print(
            Text(
                f"{label}: run {run.id} [{run.kind}] model {escape_output(run.model_id)} · "
                f"{commit} · {side.cases_evaluated} case(s) evaluated · {run.started_at[:19]}"
            )
        )
    if c.a.run.model_id != c.b.run.model_id:
        console.print(Text(f"model: {c.a.run.model_id} → {c.b.run.model_id}", style="bold"))
    if c.manifest_changes:
        console.print(Text(f"manifest: {len(c.manifest_changes)} input(s) differ"))
        for m in c.manifest_changes:
            console.print(Text(f"  {m.kind:8} {escape_output(m.path)}"))
    else:
        console.print(Text("manifest: identical inputs"))
    totals = Table(show_edge=False, title="verdict counts", title_justify="left")
    totals.add_column("")
    for v in VERDICT_ORDER:
        totals.add_column(str(v), justify="right")
    totals.add_row("A", *(str(c.a.verdicts.get(v, 0)) for v in VERDICT_ORDER))
    totals.add_row("B", *(str(c.b.verdicts.get(v, 0)) for v in VERDICT_ORDER))
    totals.add_row("Δ", *(f"{c.verdict_delta[v]:+d}" for v in VERDICT_ORDER))
    console.print(totals)

    if c.withheld:
        console.print(
            Text("content comparison withheld (not enough evidence):", style="bold yellow")
        )
        for reason in c.withheld:
            console.print(Text(f"  {reason}", style="yellow"))
    else:
        table = Table(show_edge=False, title="per case, largest drop first", title_justify="left")
        for col in (
            "suite",
            "case",
            "A",
            "B",
            "rate A",
            "rate B",
            "Δ",
            "p (one-sided)",
            "verdicts Δ",
        ):
            table.add_column(col, justify="right" if col in ("Δ", "p (one-sided)") else "left")
        for d in c.deltas:
            style = "bold red" if d.significant_drop else ("green" if d.significant else "")
            delta = "–" if d.delta is None else f"{d.delta:+.0%}"
            table.add_row(
                Text(escape_output(d.suite)),
                Text(escape_output(d.case_id)),
                f"{d.a.passes}/{d.a.content_samples}",
                f"{d.b.passes}/{d.b.content_samples}",
                _pct(d.rate_a),
                _pct(d.rate_b),
                Text(delta, style=style),
                Text(_p(d.p_value), style=style),
                _delta_text(d.verdict_delta),
            )
        console.print(table)
        drops = c.significant_drops
        if drops:
            console.print(
                Text(
                    f"{len(drops)} case(s) dropped beyond sampling noise (p < 0.05)",
                    style="bold red",
                )
            )
        else:
            console.print(Text("no drop distinguishable from sampling noise (p < 0.05)"))
    if c.changed:
        console.print(
            Text("case changed (case file differs; not compared as a regression):", style="yellow")
        )
        for a, b in c.changed:
            console.print(
                Text(
                    f"  {escape_output(a.suite)}/{escape_output(a.case_id)}  "
                    f"A {a.passes}/{a.samples}  B {b.passes}/{b.samples}"
                )
            )
    for label, only in (("only in A", c.only_a), ("only in B", c.only_b)):
        if only:
            names = ", ".join(f"{x.suite}/{x.case_id}" for x in only)
            console.print(Text(f"{label}: {escape_output(names)}"))
