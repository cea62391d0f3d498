"""`redline baseline save|compare`: accept a run as the baseline, or hold a run against it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from redline.cli.output import add_format_option, make_console, make_table, print_json
from redline.cli.show import require_store
from redline.config import load_config
from redline.deciding.baseline import (
    REGRESSION_STATUSES,
    BaselineCase,
    BaselineComparison,
    CaseComparison,
    CaseStatus,
    compare_run_with_baselines,
    save_baselines,
)
from redline.errors import UsageError
from redline.running.exchange import run_json
from redline.running.store import RunStore
from redline.textsafe import escape_output
from redline.vocabulary.records import CaseRecord

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
        description="Accepted baselines live in baselines/<suite>.json (commit them): per "
        "case the accepted pass count, mean scores, pinned model, case hash and a golden "
        "output. `save` accepts a finished run; `compare` holds a run against them.",
    )
    actions = parser.add_subparsers(dest="baseline_action", metavar="ACTION", required=True)
    save = actions.add_parser(
        "save",
        help="write baselines/<suite>.json from a finished run",
        description="Write baselines/<suite>.json for every suite of a finished run. A run "
        "that covered only some cases (--case, --tier, --shard, a rerun) updates only those; "
        "the other cases keep their accepted entry.",
    )
    save.add_argument("run_id", metavar="RUN_ID", help="the finished run to accept")
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
    compare = actions.add_parser(
        "compare",
        help="compare a run with the committed baselines",
        description="Hold a run against the committed baselines, case by case. A regression "
        "is a case that passed in the baseline and fails now; a score drop is a scored "
        "assertion (semantic or judge) whose mean fell by more than --score-drop. A case "
        "whose pass rate rose is improved, never a regression; a case whose file changed is "
        "'case changed'. Exit 1 when any case regressed or dropped, else 0.",
    )
    compare.add_argument("run_id", metavar="RUN_ID", help="the run to check")
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
    add_format_option(compare)
    compare.set_defaults(handler=_compare)


def _open(args: argparse.Namespace) -> tuple[RunStore, Path, float]:
    config = load_config()
    directory = args.dir if args.dir is not None else config.root / "baselines"
    return RunStore.open(require_store(config.store_path)), directory, config.score_drop


def _save(args: argparse.Namespace) -> int:
    store, directory, _ = _open(args)
    with store:
        paths = save_baselines(store, args.run_id, directory, case_ids=args.cases)
    console = make_console()
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
    if args.format == "json":
        print_json(comparison_json(result, drop))
    else:
        print_comparison(make_console(), result, drop)
    return 1 if result.regressions else 0


def _side_json(case: BaselineCase | CaseRecord | None) -> dict[str, Any] | None:
    if case is None:
        return None
    return {
        "passes": case.passes,
        "samples": case.samples,
        "required": case.required,
        "result": str(case.result),
        "model_id": case.model_id,
    } | ({"run_id": case.run_id} if isinstance(case, BaselineCase) else {})


def _case_json(c: CaseComparison) -> dict[str, Any]:
    return {
        "suite": c.suite,
        "case_id": c.case_id,
        "status": str(c.status),
        "regression": c.status in REGRESSION_STATUSES,
        "baseline": _side_json(c.baseline),
        "now": _side_json(c.current),
        "score_drops": [
            {"assertion": d.key, "baseline": d.baseline, "now": d.current, "relative": d.relative}
            for d in c.drops
        ],
    }


def comparison_json(result: BaselineComparison, drop: float) -> dict[str, Any]:
    """The comparison for scripts: each case once, with its one status."""
    return {
        "run": run_json(result.run),
        "score_drop": drop,
        "missing_suites": list(result.missing_suites),
        "cases": [_case_json(c) for c in result.cases],
        "counts": {str(s): n for s, n in _status_counts(result).items() if n},
        "regressions": len(result.regressions),
    }


def _status_counts(result: BaselineComparison) -> dict[CaseStatus, int]:
    return {s: sum(1 for c in result.cases if c.status is s) for s in CaseStatus}


def print_comparison(console: Console, result: BaselineComparison, drop: float) -> None:
    run = result.run
    console.print(
        Text(f"run {run.id} ({run.model_id}) against the baselines, score drop > {drop:.0%}")
    )
    for suite in result.missing_suites:
        console.print(Text(f"suite {suite}: no baseline file, not compared", style="yellow"))
    table = make_table(
        ("suite", "case", "status", "baseline", "now", "details"), whole=("case",), show_edge=False
    )
    for c in result.cases:
        base = f"{c.baseline.passes}/{c.baseline.samples} {c.baseline.result}" if c.baseline else ""
        now = f"{c.current.passes}/{c.current.samples} {c.current.result}" if c.current else ""
        details = [
            ("score " if c.status is CaseStatus.SCORE_DROP else "score (noted) ") + str(d)
            for d in c.drops
        ]
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
    counts = _status_counts(result)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    console.print(
        Text(f"{len(result.cases)} case(s): {summary}" if summary else "no cases compared")
    )
    bad = result.regressions
    if bad:
        kinds = " + ".join(
            f"{counts[s]} {s}" for s in CaseStatus if s in REGRESSION_STATUSES and counts[s]
        )
        console.print(
            Text(f"{len(bad)} case(s) fail the baseline ({kinds}): exit 1", style="bold red")
        )
    else:
        console.print(Text("no case fails the baseline", style="green"))
