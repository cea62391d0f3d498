"""`redline compare RUN_A RUN_B`: per-case deltas for a model migration or a prompt change.

Exit codes: 3 when the content comparison is withheld for lack of evidence, 1 when at least one case
dropped significantly from A to B (one-sided Fisher p < 0.05), 0 otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.text import Text

from redline.cli import ExitCode
from redline.cli.output import add_format_option, make_console, make_table, print_json
from redline.compare import CaseDelta, Comparison, RunSide, compare_runs
from redline.config import load_config
from redline.errors import UsageError
from redline.exchange import run_json
from redline.store import RunStore
from redline.textsafe import escape_output
from redline.verdicts import VERDICT_ORDER, Verdict


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "compare",
        help="compare two runs case by case (A → B)",
        description="Compare two stored runs case by case (a model migration, a prompt "
        "change): pass rates A and B, the difference and a one-sided Fisher p-value, verdict "
        "count deltas, model ids and the inputs that differ. A run that covered only some "
        "cases (a rerun, --case, --tier, a shard) is compared on those cases only. "
        "Exit 0: no significant drop; 1: a case dropped with p < 0.05; 3: too little "
        "content evidence to compare (fewer than 8 cases, or over 20% truncated or "
        "transport samples).",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. current model)")
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate run")
    add_format_option(parser)
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    config = load_config()
    if not config.store_path.exists():
        raise UsageError(f"no run store at {config.store_path}; run `redline run` first")
    with RunStore.open(config.store_path) as store:
        result = compare_runs(store, args.run_a, args.run_b)
    if args.format == "json":
        print_json(comparison_json(result))
    else:
        print_comparison(make_console(), result)
    if result.withheld:
        return ExitCode.INCONCLUSIVE
    return ExitCode.RED if result.significant_drops else ExitCode.GREEN


def _side_json(side: RunSide) -> dict[str, Any]:
    return {
        "run": run_json(side.run),
        "cases_evaluated": side.cases_evaluated,
        "verdicts": {str(v): side.verdicts.get(v, 0) for v in VERDICT_ORDER},
        "withheld": side.withheld,
    }


def _case_json(d: CaseDelta) -> dict[str, Any]:
    return {
        "suite": d.suite,
        "case_id": d.case_id,
        "a": {"passes": d.a.passes, "content_samples": d.a.content_samples, "rate": d.rate_a},
        "b": {"passes": d.b.passes, "content_samples": d.b.content_samples, "rate": d.rate_b},
        "delta": d.delta,
        "p_value": d.p_value,
        "significant_drop": d.significant_drop,
        "significant": d.significant,
        "verdict_delta": {str(v): n for v, n in d.verdict_delta.items()},
    }


def comparison_json(c: Comparison) -> dict[str, Any]:
    """The comparison for scripts: every fact of the tables, nothing cut."""
    return {
        "a": _side_json(c.a),
        "b": _side_json(c.b),
        "narrowed_to": c.narrowed_to,
        "withheld": c.withheld,
        "manifest_changes": [
            {"path": m.path, "kind": m.kind, "a": m.a, "b": m.b} for m in c.manifest_changes
        ],
        "verdict_delta": {str(v): n for v, n in c.verdict_delta.items()},
        "cases": [_case_json(d) for d in c.deltas],
        "significant_drops": [f"{d.suite}/{d.case_id}" for d in c.significant_drops],
        "case_changed": [
            {
                "suite": a.suite,
                "case_id": a.case_id,
                "a": {"passes": a.passes, "samples": a.samples},
                "b": {"passes": b.passes, "samples": b.samples},
            }
            for a, b in c.changed
        ],
        "only_in_a": [f"{x.suite}/{x.case_id}" for x in c.only_a],
        "only_in_b": [f"{x.suite}/{x.case_id}" for x in c.only_b],
    }


def _delta_text(delta: dict[Verdict, int]) -> str:
    return " ".join(f"{v} {n:+d}" for v, n in delta.items() if n)


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
    if c.narrowed_to is not None:
        console.print(
            Text(
                f"covering only the cases run {c.narrowed_to} ran "
                f"(the other run's remaining cases and inputs are left out)"
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
    verdict_names = [str(v) for v in VERDICT_ORDER]
    totals = make_table(
        ("", *verdict_names), title="verdict counts", right=verdict_names, show_edge=False
    )
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
        table = make_table(
            ("suite", "case", "A", "B", "rate A", "rate B", "Δ", "p (one-sided)", "verdicts Δ"),
            title="per case, largest drop first",
            right=("Δ", "p (one-sided)"),
            whole=("case",),
            show_edge=False,
        )
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
                Text(d.p_text, style=style),
                _delta_text(d.verdict_delta),
            )
        console.print(table)
        drops = c.significant_drops
        if c.same_draws:
            console.print(
                Text(
                    "both runs froze their seeds on the same model: their samples are the same "
                    "draws, not independent evidence, so no p-value is reported; a changed "
                    "pass count is a changed answer to the same draw",
                    style="yellow",
                )
            )
        elif drops:
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
