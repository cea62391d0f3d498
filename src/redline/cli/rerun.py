"""`redline rerun RUN_ID CASE`: triage step 1 from the command line.

Reruns one case of a stored run against the prompt as it was at a base revision, with
more samples, stores it as a `rerun` run linked to the original, and prints both rates
and the conclusion. Exit 1 when the change regressed the case, 3 when the evidence is
not enough, 0 when the case fails on the unchanged prompt too (your change is cleared).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from rich.text import Text

from redline.budget import budget_note
from redline.cli import ExitCode
from redline.cli.output import make_console
from redline.cli.run import PlainProgress, check_cost, usd_amount
from redline.config import load_config
from redline.errors import UsageError
from redline.records import CaseRecord, RunRecord
from redline.rerun import (
    Conclusion,
    compare_rerun,
    default_revision,
    default_samples,
    find_case,
    rerun_options,
    run_rerun,
    suite_at_revision,
)
from redline.store import RunStore

_EXIT = {
    Conclusion.REGRESSION: ExitCode.RED,
    Conclusion.UNDECIDED: ExitCode.INCONCLUSIVE,
    Conclusion.CASE_AT_FAULT: ExitCode.GREEN,
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "rerun",
        description="Rerun CASE of RUN_ID with more samples against the prompt files as they "
        "were at a base revision (default: the merge-base of HEAD with the default branch), "
        "then compare the two pass rates. Exit 1: your change regressed it; 0: it fails on "
        "the unchanged prompt too; 3: not enough evidence.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    parser.add_argument("case", metavar="CASE", help="case id")
    parser.add_argument("--suite", help="the case's suite, when two suites share a case id")
    parser.add_argument("--rev", help="git revision of the unchanged prompt")
    parser.add_argument(
        "--samples", type=int, help="samples for the rerun (default: max(20, 4 × the run's))"
    )
    parser.add_argument(
        "--budget",
        type=usd_amount,
        metavar="USD",
        help="stop once this many US dollars are spent (default: max_run_cost)",
    )
    parser.add_argument(
        "--yes", action="store_true", help="do not ask before a rerun estimated over the threshold"
    )
    parser.set_defaults(handler=_rerun)


def _rerun(args: argparse.Namespace) -> int:
    config = load_config()
    if args.samples is not None and args.samples < 1:
        raise UsageError("--samples must be at least 1")
    console = make_console()
    with RunStore.open(config.store_path) as store:
        run = store.run(args.run_id)
        current = _case_record(store.cases(run.id), args.case, args.suite, run)
        suite, case = find_case(config, current.suite, current.case_id)
        rev, why = (args.rev, "given with --rev") if args.rev else default_revision(config.root)
        samples = args.samples or default_samples(current.samples)
        unchanged = suite_at_revision(suite, config.root, rev)
        options = replace(rerun_options(run, case, samples, rev), budget=args.budget)
        options = check_cost(console, config, store, [unchanged], options, assume_yes=args.yes)
        console.print(
            Text(f"rerunning {current.suite}/{current.case_id}: {samples} samples, prompt at {rev}")
            + Text(f" ({why})", style="dim")
        )
        with PlainProgress() as progress:
            record = run_rerun(
                store,
                config,
                unchanged,
                case,
                run,
                samples,
                rev,
                progress.update,
                budget=options.budget,
            )
        rerun = _case_record(store.cases(record.id), current.case_id, current.suite, record)
    result = compare_rerun(current, rerun)
    console.print(Text(f"current prompt    (run {run.id}):   {result.current.describe()}"))
    console.print(Text(f"unchanged prompt  (rerun {record.id}): {result.unchanged.describe()}"))
    console.print(Text(f"one-sided Fisher p = {result.p_value:.4f}"))
    console.print(Text(result.conclusion.value, style="bold"))
    note = budget_note(record.args)
    if note is not None:
        console.print(Text(note, style="bold yellow"))
        return ExitCode.INCONCLUSIVE
    return _EXIT[result.conclusion]


def _case_record(
    cases: list[CaseRecord], case_id: str, suite: str | None, run: RunRecord
) -> CaseRecord:
    found = [c for c in cases if c.case_id == case_id and (suite is None or c.suite == suite)]
    if not found:
        raise UsageError(f"run {run.id} has no case {case_id!r}")
    if len(found) > 1:
        suites = ", ".join(c.suite for c in found)
        raise UsageError(f"case {case_id!r} is in several suites ({suites}); add --suite")
    return found[0]
