"""`redline baseline save|compare`: accept a run as the baseline, or hold a run against it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from redline.baseline import (
    REGRESSION_STATUSES,
    BaselineComparison,
    CaseStatus,
    compare_run_with_baselines,
    save_baselines,
)
from redline.config import load_config
from redline.errors import UsageError
from redline.store import RunStore
from redline.textsafe import escape_output

_STYLE = {
    CaseStatus.REGRESSION: "bold red",
    CaseStatus.SCORE_DROP: "red",
    CaseStatus.CASE_CHANGED: "yellow",
    CaseStatus.INCONCLUSIVE: "yellow",
    CaseStatus.IMPROVED: "green",
    CaseStatus.NEW: "cyan",
    CaseStatus.REMOVED: "magenta",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "baseline",
    )
    actions = parser.add_subparsers(dest="baseline_action", metavar="ACTION", required=True)
    save = actions.add_parser("save", help="write baselines/<suite>.json from a finished run")
    save.add_argument("run_id", metavar="RUN_ID")
    save.add_argument(
        "--case",
        dest="cases",
        action="append",
        default=[],
        metavar="ID",
        help="accept only this case (repeatable); other cases keep their entry",
    )
    save.add_argument(
        "--dir", type=Path, default=None, help="baselines folder (default baselines/)"
    )
    save.set_defaults(handler=_save)
    compare = actions.add_parser("compare", help="compare a run with the committed baselines")
    compare.add_argument("run_id", metavar="RUN_ID")
    compare.add_argument(
        "--score-drop",
        type=float,
        default=None,
        metavar="F",
        help="relative score drop that counts (default: config score_drop, 0.10); "
        "a drop of exactly F is not counted",
    )
    compare.add_argument(
        "--dir", type=Path, default=None, help="baselines folder (default baselines/)"
    )
    compare.set_defaults(handler=_compare)


def _open(args: argparse.Namespace) -> tuple[RunStore, Path, float]:
    config = load_config()
    if not config.store_path.exists():
        raise UsageError(f"no run store at {config.store_path}; run `redline run` first")
    directory = args.dir if args.dir is not None else config.root / "baselines"
    return RunStore.open(config.store_path), directory, config.score_drop


def _save(args: argparse.Namespace) -> int:
    store, directory, _ = _open(args)
    with store:
        paths = save_baselines(store, args.run_id, directory, case_ids=args.cases)
    console = Console()
    for path in paths:
        print(f"wrote {path}")
    console.print("Commit the baseline file(s) with the change that justifies them.")
    return 0


def _compare(args: argparse.Namespace) -> int:
    store, directory, default_drop = _open(args)
    drop = default_drop if args.score_drop is None else args.score_drop
    if not 0 <= drop < 1:
        raise UsageError(f"--score-drop {drop}: must be a fraction in [0, 1)")
    with store:
        result = compare_run_with_baselines(store, args.run_id, directory, score_drop=drop)
    print_comparison(Console(), result, drop)
    return 1 if result.regressions else 0


def print_comparison(console: Console, result: BaselineComparison, drop: float) -> None:
    run = result.run
    console.print(
        Text(f"run {run.id} ({run.model_id}) against the baselines, score drop > {drop:.0%}")
    )
    for suite in result.missing_suites:
        console.print(Text(f"suite {suite}: no baseline file, not compared", style="yellow"))
    table = Table(show_edge=False)
    for col in ("suite", "case", "status", "baseline", "now", "details"):
        table.add_column(col)
    for c in result.cases:
        base = f"{c.baseline.passes}/{c.baseline.samples} {c.baseline.result}" if c.baseline else ""
        now = f"{c.current.passes}/{c.current.samples} {c.current.result}" if c.current else ""
        details = [str(d) for d in c.drops]
        if c.baseline and c.current and c.baseline.model_id != c.current.model_id:
            details.append(f"model {c.baseline.model_id} → {c.current.model_id}")
        if c.status is CaseStatus.CASE_CHANGED:
            details.append("case file changed: not a regression; re-accept after review")
        table.add_row(
            Text(escape_output(c.suite)),
            Text(escape_output(c.case_id)),
            Text(str(c.status), style=_STYLE.get(c.status, "")),
            base,
            now,
            Text(escape_output("; ".join(details))),
        )
    console.print(table)
    counts = {s: sum(1 for c in result.cases if c.status is s) for s in CaseStatus}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    console.print(Text(summary or "no cases compared"))
    bad = [c for c in result.cases if c.status in REGRESSION_STATUSES]
    if bad:
        console.print(Text(f"{len(bad)} regression(s) against the baseline", style="bold red"))
