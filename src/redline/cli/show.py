"""`redline show RUN_ID [CASE]`: a run's case table, or one case's samples as evidence.

Raw outputs are printed through `redline.textsafe` inside `rich.text.Text`: control
characters and escape sequences are shown visibly, rich markup is never interpreted.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from redline.cli.output import (
    add_format_option,
    make_console,
    make_table,
    print_json,
    verdict_breakdown,
)
from redline.config import Config, load_config
from redline.errors import CaseInSeveralSuites, CaseNotFound, RedlineError, StoreMissing, UsageError
from redline.presentation import (
    OUTCOME_STYLES,
    VERDICT_STYLES,
    result_headline_style,
    stopped_early_note,
)
from redline.running.budget import budget_note
from redline.running.exchange import case_json, run_json, sample_json
from redline.running.store import RunStore
from redline.textsafe import escape_output
from redline.transcript import transcript_text
from redline.vocabulary.records import CaseOutcome, CaseRecord, CiOrigin, RunRecord, SampleRecord
from redline.vocabulary.verdicts import AssertionStatus

RESULT_STYLES = OUTCOME_STYLES
STATUS_STYLES = {
    AssertionStatus.PASSED: "green",
    AssertionStatus.FAILED: "red",
    AssertionStatus.UNAVAILABLE: "yellow",
    AssertionStatus.SKIPPED: "dim",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "show",
        description="Print a run's case results, or every sample of one case with its "
        "verdict, assertion results and raw output (escaped, never interpreted).",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    parser.add_argument(
        "case", metavar="CASE", nargs="?", help="case id (or suite/case): show its samples"
    )
    parser.add_argument("--suite", help="the case's suite, when two suites share a case id")
    parser.add_argument(
        "--diff",
        action="store_true",
        help="with CASE: show each sample as a unified diff against the baseline's golden output",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help=f"list every case; a run of more than {LIST_EVERY_CASE_UP_TO:,} cases lists only "
        f"the ones that did not pass (at most {LIST_EVERY_CASE_UP_TO:,}) and counts the rest",
    )
    add_format_option(parser)
    parser.set_defaults(handler=_show)


#: Above this many cases a table of every one is too long to read (and to print quickly).
LIST_EVERY_CASE_UP_TO = 200


def _show(args: argparse.Namespace) -> int:
    config = load_config()
    console = make_console()
    with RunStore.open(require_store(config.store_path)) as store:
        run = store.run(args.run_id)
        if args.case is None:
            if args.diff:
                raise UsageError("--diff needs a CASE")
            origin = store.ci_origins([run.id]).get(run.id)
            counts = store.outcome_counts(run.id)
            if (
                args.format == "table"
                and not args.all
                and sum(counts.values()) > LIST_EVERY_CASE_UP_TO
            ):
                console.print(run_header(run, origin))
                print_cases_not_passed(console, store, run.id, counts)
                return 0
            cases = store.cases(run.id)
            if args.format == "json":
                print_json(
                    {
                        "run": run_json(run),
                        "ci": None if origin is None else asdict(origin),
                        "cases": [case_json(c) for c in cases],
                    }
                )
                return 0
            console.print(run_header(run, origin))
            console.print(case_table(cases))
            return 0
        samples = store.samples(run.id, args.case, args.suite)
        if not samples and args.suite is None and "/" in args.case:
            # `suite/case`, as the run's summary table names a case when suites share ids.
            args.suite, args.case = args.case.split("/", 1)
            samples = store.samples(run.id, args.case, args.suite)
        if not samples:
            raise CaseNotFound(
                f"run {run.id} has no samples of case {args.case!r} (see `redline show {run.id}`)"
            )
        suites = sorted({s.suite for s in samples})
        if len(suites) > 1:
            raise CaseInSeveralSuites(args.case, suites, "pick one with --suite")
        case = store.case(run.id, suites[0], args.case)
        if args.format == "json":
            if args.diff:
                raise UsageError("--diff prints diffs for people; drop it with --format json")
            print_json(
                {
                    "run": run_json(run),
                    "case": None if case is None else case_json(case),
                    "samples": [sample_json(s) for s in samples],
                }
            )
            return 0
        console.print(run_header(run, store.ci_origins([run.id]).get(run.id)))
        if case is not None:
            console.print(case_line(case))
        baselines = config.root / "baselines" if args.diff else None
        case_golden = _case_golden(config, suites[0], args.case) if args.diff else None
        for sample in samples:
            print_sample(console, sample, baselines, case_golden)
    return 0


def print_cases_not_passed(
    console: Console,
    store: RunStore,
    run_id: str,
    counts: Mapping[CaseOutcome, int],
    title: str | None = None,
) -> None:
    """A large run as a table of its cases that did not pass (none: no table, only its
    title) and the count of the rest."""
    listed = store.cases_not_passed(run_id, LIST_EVERY_CASE_UP_TO)
    if listed:
        console.print(case_table(listed, title=title))
    elif title is not None:
        console.print(Text(title, style="table.title"))  # as the table would show it
    console.print(not_listed(counts, len(listed), run_id))


def not_listed(counts: Mapping[CaseOutcome, int], listed: int, run_id: str) -> Text:
    """What a large run's table leaves out, and the commands that list it."""
    passed = counts.get(CaseOutcome.PASS, 0)
    total = sum(counts.values())
    others = total - passed - listed
    text = f"{passed:,} of {total:,} cases passed and are not listed"
    if others:
        text += f"; {others:,} more that did not pass are not listed either"
    return Text(
        f"{text}: `redline show {run_id} --all` lists every case, "
        f"`redline show {run_id} CASE` shows one case's samples",
        style="dim",
    )


def _case_golden(config: Config, suite: str, case_id: str) -> str | None:
    """The case file's own `golden:` answer as the files say now; None when it has none or
    the case cannot be loaded (retired, renamed, or the suite does not validate)."""
    from redline.deciding.rerun import find_case

    try:
        return find_case(config, suite, case_id)[1].golden
    except RedlineError:
        return None


def require_store(path: Path) -> Path:
    """`path` when a store exists there; a usage error otherwise (a read never creates one)."""
    if not path.exists():
        raise StoreMissing(
            path, "nothing has been run here yet (`redline run`, or `redline import` an export)"
        )
    return path


def run_header(run: RunRecord, origin: CiOrigin | None = None) -> Text:
    """One block naming the run: id, kind, status/result, model, git state, time, CI run."""
    text = Text()
    text.append("run ", style="bold")
    text.append(run.id, style="bold cyan")
    text.append(f"  {run.kind}")
    if run.parent_id:
        text.append(f" of {run.parent_id}")
    text.append(f"  {run.status}")
    if run.result is not None:
        text.append(f"  {run.result}", style=result_headline_style(run.result))
    text.append(f"\nmodel {run.model_id} (alias {run.model_alias})")
    text.append(f"  suites {', '.join(run.suites)}")
    commit = run.git_commit[:12] if run.git_commit else "no git commit"
    text.append(f"\ngit {commit}{' (dirty)' if run.git_dirty else ''}")
    text.append(f"  started {run.started_at}")
    if run.finished_at:
        text.append(f"  finished {run.finished_at}")
    if run.args.get("against"):
        text.append(f"\nthe cases and samples of run {run.args['against']}, on another model")
    stopped = budget_note(run.args)
    if stopped is not None:
        text.append(f"\n{stopped}", style="bold yellow")
    if origin is not None:
        text.append(f"\npulled from {origin.label} ({origin.repo}) {origin.url}")
    return text


def case_table(cases: Sequence[CaseRecord], title: str | None = None) -> Table:
    """The summary table: case, tier, passes/samples, required, verdicts, result."""
    table = make_table(
        ("case", "tier", "passes", "required", "verdicts", "result"),
        title=title,
        right=("passes", "required"),
        whole=("case",),
    )
    suites = {c.suite for c in cases}
    for c in cases:
        name = f"{c.suite}/{c.case_id}" if len(suites) > 1 else c.case_id
        table.add_row(
            Text(name),
            Text(c.tier),
            Text(f"{c.passes}/{c.samples}" + (f" (+{c.uncounted} late)" if c.uncounted else "")),
            Text(str(c.required)),
            verdict_breakdown(c.verdicts),
            Text(str(c.result), style=RESULT_STYLES[c.result]),
        )
    return table


def case_line(case: CaseRecord) -> Text:
    text = Text()
    text.append(f"{case.suite}/{case.case_id}", style="bold")
    text.append(f"  {case.tier}  {case.passes}/{case.samples} ok, required {case.required}  ")
    text.append(str(case.result), style=RESULT_STYLES[case.result])
    if case.bar is not None and case.margin is not None:
        text.append(
            f"  (sequential: bar {case.bar:.0%}, marginal within {case.margin:.0%} of it; "
            f"{case.required} of {case.samples} is the fewest that pass)",
            style="dim",
        )
    if case.uncounted:
        text.append(
            f"  {case.uncounted} sample(s) drawn in the same batch after the test had "
            "decided: stored, not counted",
            style="dim",
        )
    return text


def print_sample(
    console: Console,
    sample: SampleRecord,
    baselines: Path | None = None,
    case_golden: str | None = None,
) -> None:
    """One sample as evidence: metadata, assertion results, then the escaped raw output."""
    head = Text()
    head.append(f"\n── sample {sample.index} ", style="bold")
    head.append(str(sample.verdict), style=VERDICT_STYLES[sample.verdict])
    facts = [f"finish {sample.finish_reason or '-'}"]
    if sample.latency_ms is not None:
        facts.append(f"{sample.latency_ms:.0f} ms")
    if sample.input_tokens is not None or sample.output_tokens is not None:
        facts.append(f"tokens {sample.input_tokens or 0}→{sample.output_tokens or 0}")
    if sample.cost is not None:
        facts.append(f"cost {sample.cost:.6f}")
    if sample.seed is not None:
        facts.append(f"seed {sample.seed}")
    if sample.attempts != 1:
        facts.append(f"attempts {sample.attempts}")
    if sample.model:
        facts.append(f"model {sample.model}")
    head.append("  " + "  ".join(escape_output(f, keep_layout=False) for f in facts))
    console.print(head)
    if sample.error:
        console.print(Text("error: " + escape_output(sample.error), style="yellow"))
    stopped = stopped_early_note(sample)
    if stopped is not None:
        console.print(Text(escape_output(stopped, keep_layout=False), style="cyan"))
    for a in sample.assertions:
        line = Text("  ")
        line.append(f"{a.status:<11}", style=STATUS_STYLES[a.status])
        line.append(f" [{a.index}] {a.type}")
        if a.score is not None:
            line.append(f"  score {a.score:.4g}")
            if a.threshold is not None:
                line.append(f" / {a.threshold:.4g}")
        line.append("  " + escape_output(a.reason, keep_layout=False), style="dim")
        console.print(line)
    if baselines is not None:
        from redline.deciding.baseline import sample_golden_diff

        diff, reference = sample_golden_diff(baselines, sample, case_golden)
        if diff is None:
            console.print(Text(f"  {reference.source}", "dim"))
        elif not diff:
            console.print(Text(f"  identical to {reference.source}", "green"))
        else:
            console.print(Text(f"  diff against {reference.source}", "dim"))
            for line_text in diff.split("\n"):
                style = ""
                if line_text.startswith("+") and not line_text.startswith("+++"):
                    style = "green"
                elif line_text.startswith("-") and not line_text.startswith("---"):
                    style = "red"
                console.print(Text(escape_output(line_text, keep_layout=False), style=style))
        return
    console.print(Text("output:", style="dim"))
    console.print(Text(escape_output(transcript_text(sample))), soft_wrap=True)
