"""`redline compare RUN_A RUN_B`: per-case deltas for a model migration or a prompt change.

Beside pass rates: latency, tokens, cost (priced from the config's price table) and the
four-way split. `--format json` prints the same as data, `--format markdown` a table for a
pull-request description.

Exit codes: 3 when the content comparison is withheld for lack of evidence, 1 when at least one case
dropped significantly from A to B (one-sided Fisher p < 0.05), 0 otherwise.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.text import Text

from redline.cli import ExitCode
from redline.cli.output import add_format_option, make_console, make_table, print_json
from redline.cli.show import require_store
from redline.config import load_config
from redline.deciding.compare import Comparison, Split, compare_runs
from redline.report.comparison import (
    SPLIT_NOTES,
    columns,
    comparison_json,
    comparison_markdown,
    total_lines,
)
from redline.running.store import RunStore
from redline.textsafe import escape_output
from redline.vocabulary.verdicts import VERDICT_ORDER


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "compare",
        description="Compare two stored runs case by case, e.g. the current model (A) and a "
        "candidate (B): pass rates with a one-sided Fisher test, latency, tokens, cost, verdict "
        "deltas and the four-way split. A run that covered only some cases (a rerun, --case, "
        "--tier, a shard) is compared on those cases only. Exit 0: no significant drop; 1: a "
        "case dropped (p < 0.05); 3: too little content evidence to compare (fewer than 8 "
        "cases, or over 20% truncated or transport samples).",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. current model)")
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate run")
    add_format_option(
        parser, extra=("markdown",), more_help="; markdown for a pull-request description"
    )
    parser.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        result = compare_runs(store, args.run_a, args.run_b, config.price)
    show_comparison(result, args.format)
    return comparison_exit(result)


def comparison_exit(c: Comparison) -> ExitCode:
    """3 while content is withheld (too little evidence), 1 on a significant drop, else 0."""
    if c.withheld:
        return ExitCode.INCONCLUSIVE
    return ExitCode.RED if c.significant_drops else ExitCode.GREEN


def show_comparison(c: Comparison, fmt: str = "table", console: Console | None = None) -> None:
    """Print `c` to stdout as a table, JSON or Markdown."""
    if fmt == "json":
        print_json(comparison_json(c))
    elif fmt == "markdown":
        print(comparison_markdown(c), end="")
    else:
        print_comparison(console or make_console(), c)


def print_comparison(console: Console, c: Comparison) -> None:
    """The comparison for a terminal: the runs, the totals, each case, then the verdict."""
    _print_runs(console, c)
    _print_totals(console, c)
    if c.withheld:
        _print_withheld(console, c)
    _print_case_tables(console, c)
    if not c.withheld:
        _print_split_and_drops(console, c)
    _print_cases_apart(console, c)


def _print_runs(console: Console, c: Comparison) -> None:
    """Which runs are compared, on what, and which inputs differ."""
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


def _print_totals(console: Console, c: Comparison) -> None:
    """Verdict counts of each run and the totals of the compared cases."""
    verdict_names = [str(v) for v in VERDICT_ORDER]
    totals = make_table(
        ("", *verdict_names), title="verdict counts", right=verdict_names, show_edge=False
    )
    totals.add_row("A", *(str(c.a.verdicts.get(v, 0)) for v in VERDICT_ORDER))
    totals.add_row("B", *(str(c.b.verdicts.get(v, 0)) for v in VERDICT_ORDER))
    totals.add_row("Δ", *(f"{c.verdict_delta[v]:+d}" for v in VERDICT_ORDER))
    console.print(totals)

    overall = make_table(
        ("", "A", "B", "change"),
        title="in total (compared cases)",
        right=("A", "B", "change"),
        show_edge=False,
    )
    for line in total_lines(c):
        overall.add_row(line.label, line.a, line.b, line.change)
    console.print(overall)


def _print_withheld(console: Console, c: Comparison) -> None:
    console.print(
        Text(
            "content comparison withheld: too little content evidence to compare pass "
            "rates (latency, tokens and cost are still shown):",
            style="bold yellow",
        )
    )
    for reason in c.withheld:
        console.print(Text(f"  {reason}", style="yellow"))


def _print_case_tables(console: Console, c: Comparison) -> None:
    """One table of pass rates and one of latency, tokens and cost, a row per case."""
    titles = {
        False: "per case: pass rates, largest drop first" if not c.withheld else "per case",
        True: "per case: latency, tokens and cost, A → B",
    }
    for usage, title in titles.items():
        shown = columns(c, usage=usage)
        table = make_table(
            [col.header for col in shown],
            title=title,
            right=[col.header for col in shown if col.numeric],
            whole=("case",),
            show_edge=False,
        )
        for d in c.rows:
            style = ""
            if not c.withheld:
                style = "bold red" if d.significant_drop else ("green" if d.significant else "")
            table.add_row(
                *(
                    Text(escape_output(col.text(d)), style=style if col.content else "")
                    for col in shown
                )
            )
        console.print(table)


def _print_split_and_drops(console: Console, c: Comparison) -> None:
    """The four-way split of the cases, then whether any dropped beyond noise."""
    for split in Split:
        found = c.split(split)
        note = f" ({SPLIT_NOTES[split]})" if SPLIT_NOTES[split] and found else ""
        names = ""
        if found and split is not Split.BOTH_PASS:
            names = ": " + ", ".join(f"{d.suite}/{d.case_id}" for d in found)
        console.print(
            Text(f"{split}: {len(found)}{note}{escape_output(names)}"),
            style="yellow" if split is Split.BOTH_FAIL and found else "",
        )
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


def _print_cases_apart(console: Console, c: Comparison) -> None:
    """Cases not compared: changed case files, and cases only one run has."""
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
