"""`redline rerun RUN_ID CASE`: why is this case red? (triage step 1 from the command line)

Finds the reference point from the run itself, lists what changed, reruns one change at a
time (each arm a stored rerun linked to the red run) until the evidence decides, and prints
exactly one conclusion: prompt, model, case, drift, settings, noise, case-changed or
undecided. Exit 0
whatever the conclusion (the answer is the output); 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.text import Text

from redline.cli import ExitCode
from redline.cli.output import add_format_option, make_console, print_json
from redline.config import load_config
from redline.deciding.cause import CauseAnalysis, CauseProgress, Diagnosis, Settings, p_value_label
from redline.errors import CaseInSeveralSuites, CaseNotFound
from redline.presentation import CAUSE_STYLES
from redline.running.store import RunStore
from redline.vocabulary.records import CaseRecord, RunRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "rerun",
        description="Compare CASE of RUN_ID with a reference point derived from the run (the "
        "last run that passed the case on an ancestor commit, else where the run's commit "
        "left the default branch), rerun one change at a time until the evidence decides, "
        "and print one conclusion: prompt, model, case, drift, settings, noise, case-changed or "
        "undecided. Each arm also counts the samples already stored for its configuration. "
        "Every rerun is stored, linked to the run. Exit 0 whatever the conclusion.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    parser.add_argument("case", metavar="CASE", help="case id")
    parser.add_argument("--suite", help="the case's suite, when two suites share a case id")
    parser.add_argument(
        "--reference",
        "--rev",
        dest="reference",
        metavar="REV",
        help="git revision to compare with (default: derived from the run)",
    )
    parser.add_argument(
        "--budget",
        "--samples",
        dest="budget",
        type=int,
        default=Settings.budget,
        metavar="N",
        help=f"samples per arm (default {Settings.budget}); when an arm holds stored runs, "
        "Step 1 may draw up to twice that per arm on average, most of it for the arm with the "
        "fewest samples (it prints how many each arm may draw)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        metavar="N",
        help="samples per arm between looks at the evidence (default: a quarter of the "
        "budget, at least 10)",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=Settings.confidence,
        help=f"confidence of the conclusion (default {Settings.confidence})",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=Settings.margin,
        help=f"two pass rates closer than this count as the same rate (default {Settings.margin})",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=Settings.window_days,
        metavar="DAYS",
        help="stored runs of an arm's configuration from this many days before the red run "
        f"count toward it (default {Settings.window_days}; 0: none)",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    add_format_option(parser)
    parser.set_defaults(handler=_rerun)


def _rerun(args: argparse.Namespace) -> int:
    as_json = args.json or args.format == "json"
    settings = Settings(
        budget=args.budget,
        batch=args.batch,
        confidence=args.confidence,
        margin=args.margin,
        reference=args.reference,
        window_days=args.window,
    )
    config = load_config()
    console = make_console()
    with RunStore.open(config.store_path) as store:
        run = store.run(args.run_id)
        case = _case_record(store.cases(run.id), args.case, args.suite, run)
        with CauseAnalysis(store, config, run, case, settings) as analysis:
            if not as_json:
                _print_plan(console, analysis)
            diagnosis = analysis.run(_Progress(quiet=as_json))
    if as_json:
        print_json(diagnosis.to_json())
    else:
        _print_diagnosis(console, diagnosis)
    return ExitCode.GREEN


class _Progress:
    """One stderr line per finished batch of samples (quiet with --json)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._last = -1

    def __call__(self, p: CauseProgress) -> None:
        if self.quiet:
            return
        step = max(1, p.total // 8)
        if p.done // step != self._last or p.done == p.total:
            self._last = p.done // step
            arms = "  ".join(f"{a.passes}/{a.samples}" for a in p.arms if a.skipped is None)
            print(f"  {p.done} of up to {p.total} samples  {arms}", file=sys.stderr, flush=True)


def _print_plan(console: Console, analysis: CauseAnalysis) -> None:
    ref = analysis.reference
    case = analysis.case
    console.print(
        Text(f"{case.suite}/{case.case_id} of run {analysis.run_record.id}: ", style="bold")
        + Text(f"{case.passes}/{case.content_samples} passed, bar {analysis.bar.required}/")
        + Text(f"{analysis.bar.samples}")
    )
    console.print(Text("reference: ", style="bold") + Text(ref.describe()))
    changes = "; ".join(f"{c.kind.value} ({c.detail})" for c in analysis.changes) or "nothing"
    console.print(Text("changed:   ", style="bold") + Text(changes))
    plan = ", ".join(f"{a.label} up to {a.most}" for a in analysis.arms)
    if plan:
        console.print(Text("draws:     ", style="bold") + Text(plan))
    for note in analysis.notes:
        console.print(Text(f"note: {note}", style="yellow"))


def _print_diagnosis(console: Console, d: Diagnosis) -> None:
    rows = [d.red, *d.arms]
    for arm in rows:
        if arm.skipped is not None:
            console.print(Text(f"  {arm.label}: skipped", style="dim"))
            continue
        low, high = arm.interval(d.confidence)
        rate = f"{arm.passes}/{arm.samples}"
        pct = f"{arm.passes / arm.samples:.0%}" if arm.samples else "—"
        run = f"  run {arm.run_id}" if arm.run_id else ""
        console.print(
            Text(f"  {arm.label}: {rate} = {pct} ({d.confidence:.0%} CI {low:.0%}–{high:.0%}){run}")
        )
        if arm.stored:
            passes, samples = arm.stored_counts
            runs = ", ".join(f"{r.run_id} {r.passes}/{r.samples}" for r in arm.stored)
            console.print(Text(f"    incl. {passes}/{samples} stored: {runs}", style="dim"))
    for name, value in d.p_values.items():
        console.print(Text(f"  p = {value:.3g}: {p_value_label(name)}", style="dim"))
    console.print(
        Text("conclusion: ", style="bold") + Text(d.cause.value, style=CAUSE_STYLES[d.cause])
    )
    console.print(Text(d.sentence))


def _case_record(
    cases: list[CaseRecord], case_id: str, suite: str | None, run: RunRecord
) -> CaseRecord:
    found = [c for c in cases if c.case_id == case_id and (suite is None or c.suite == suite)]
    if not found:
        raise CaseNotFound(f"run {run.id} has no case {case_id!r} (see `redline show {run.id}`)")
    if len(found) > 1:
        raise CaseInSeveralSuites(case_id, (c.suite for c in found))
    return found[0]
