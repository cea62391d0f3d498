"""What `redline run` prints once the run is over: the case table, the result and why,
what it spent, and with `--against` the comparison with the reference run.

Its own module so that a run's first request does not wait for the comparison and table
code to load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.text import Text

from redline.cli import ExitCode
from redline.cli.output import verdict_breakdown
from redline.cli.show import case_table, print_cases_not_passed
from redline.config import Config
from redline.presentation import result_headline_style
from redline.providers.ratelimit import rate_limit_note
from redline.running.budget import budget_note
from redline.running.options import RunOptions
from redline.running.quarantine import (
    QUARANTINED,
    case_counts,
    describe_counts,
    quarantined_cases,
)
from redline.running.run_record import PROVIDER_DOWN_ARG, RATE_LIMIT_ARG
from redline.running.runner import select_cases
from redline.running.store import RunStore
from redline.running.usage import usage_of, usage_summary
from redline.suite.cases import Suite
from redline.vocabulary.outcome import MAX_NON_CONTENT_SHARE, add_counts, non_content_share
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunRecord, RunResult
from redline.vocabulary.verdicts import Verdict


def report_run(
    console: Console,
    store: RunStore,
    record: RunRecord,
    suites: Sequence[Suite],
    options: RunOptions,
) -> None:
    """The summary of a finished run, what it spent, and for a replay what it could not score."""
    cases = store.cases(record.id)
    _print_summary(console, record, cases, store)
    spent = usage_of([u for per in store.usage(record.id).values() for u in per], None)
    console.print(Text(usage_summary(spent), style="dim"))
    if options.replay is None:
        return
    scored = {(c.suite, c.case_id) for c in cases}
    unscored = [
        f"{c.suite}/{c.id}"
        for _, c in select_cases(suites, options)
        if (c.suite, c.id) not in scored
    ]
    if unscored:
        console.print(
            Text(
                f"not in the replayed run {options.replay}, so not scored: "
                f"{', '.join(unscored)} (a replay calls no model; run them to score them)",
                style="yellow",
            )
        )


def against_report(
    console: Console, config: Config, store: RunStore, reference: RunRecord, record: RunRecord
) -> int:
    """The comparison with the reference run; its exit code unless this run is inconclusive."""
    from redline.cli.compare import comparison_exit, print_comparison  # --against only
    from redline.deciding.compare import compare_runs

    comparison = compare_runs(store, reference.id, record.id, config.price)
    console.rule(Text(f"compared with run {reference.id}"))
    print_comparison(console, comparison)
    console.print(
        Text(
            f"for a pull request: redline compare {reference.id} {record.id} --format markdown",
            style="dim",
        )
    )
    if record.result is RunResult.INCONCLUSIVE:
        return int(ExitCode.INCONCLUSIVE)
    return int(comparison_exit(comparison))


#: The table a run ends with lists every case up to this many; above, the cases that did
#: not pass (where a red run's reasons are) and the count of the rest, as `redline show`
#: lists a run of more than `LIST_EVERY_CASE_UP_TO`.
SUMMARY_LISTS_EVERY_CASE_UP_TO = 50


def _print_summary(
    console: Console, record: RunRecord, cases: Sequence[CaseRecord], store: RunStore
) -> None:
    shard = record.args.get("shard")
    if not cases and shard:
        console.print(
            Text(
                f"run {record.id}: shard {shard[0]}/{shard[1]} owns no case of the selected "
                "suites, so nothing ran; its empty result is green and `redline merge` "
                "takes it like any other shard"
            )
        )
        return
    title = f"run {record.id} ({record.kind})"
    if len(cases) <= SUMMARY_LISTS_EVERY_CASE_UP_TO:
        console.print(case_table(cases, title=title))
    else:  # as `redline show` lists a large run: what did not pass, and the count of the rest
        print_cases_not_passed(console, store, record.id, store.outcome_counts(record.id), title)
    totals = add_counts(c.verdicts for c in cases)
    console.print(_result_line(record, cases, totals))
    share = non_content_share(totals)
    if share > MAX_NON_CONTENT_SHARE:
        console.print(
            Text(
                f"{share:.0%} of samples are truncated or transport failures "
                f"(limit {MAX_NON_CONTENT_SHARE:.0%}): this run cannot say anything about content",
                style="yellow",
            )
        )
    _print_budget_stop(console, record)
    _print_provider_down(console, record)
    _print_rate_limit(console, record)
    _print_judges(console, record)
    held = quarantined_cases(record, cases)
    if held:
        console.print(Text("quarantined (reported, not counted in the result):", style="bold"))
        for q in held:
            style = "green" if q.passing_again else "yellow"
            console.print(Text(f"  {q.case.suite}/{q.case.case_id}: {q.label}", style=style))
    console.print(Text(f"details: redline show {record.id} [CASE]", style="dim"))


def _result_line(
    record: RunRecord, cases: Sequence[CaseRecord], totals: Mapping[Verdict, int]
) -> Text:
    """`run ID: red  5 case(s): 3 pass, 2 fail, 0 inconclusive  samples: ...`."""
    counts = [
        (name, n)
        for name, n in case_counts(record, cases)
        if n or name not in (str(CaseOutcome.MARGINAL), QUARANTINED)
    ]
    line = Text()
    line.append(f"run {record.id}: ", style="bold")
    line.append(str(record.result), style=result_headline_style(record.result))
    line.append(f"  {len(cases)} case(s): {describe_counts(counts)}  samples: ")
    line.append_text(verdict_breakdown(totals))
    return line


def _print_provider_down(console: Console, record: RunRecord) -> None:
    """When the circuit breaker stopped the run: why, and how to finish it."""
    down = record.args.get(PROVIDER_DOWN_ARG)
    if not isinstance(down, str):
        return
    console.print(Text(f"stopped early: {down}", style="bold yellow"))
    console.print(
        Text(
            "the samples not drawn count as transport failures, so the run is inconclusive; "
            f"once the provider answers again: redline run --resume {record.id}",
            style="dim",
        )
    )


def _print_rate_limit(console: Console, record: RunRecord) -> None:
    """What riding the provider's rate limit did, when the run met one."""
    note = rate_limit_note(record.args.get(RATE_LIMIT_ARG))
    if note is not None:
        console.print(Text(note, style="dim"))


def _print_budget_stop(console: Console, record: RunRecord) -> None:
    """When the budget stopped the run: what was not run, and how to finish it."""
    note = budget_note(record.args)
    if note is None:
        return
    console.print(Text(note, style="bold yellow"))
    not_run = record.args["budget"].get("not_run_by_case") or {}
    console.print(Text("not run: " + ", ".join(f"{k} ×{n}" for k, n in not_run.items())))
    console.print(
        Text(
            f"to finish it with a new budget: redline run --resume {record.id} --budget USD",
            style="dim",
        )
    )


def _print_judges(console: Console, record: RunRecord) -> None:
    for path, judge in (record.args.get("judges") or {}).items():
        status = "trusted" if judge["trusted"] else "advisory"
        effect = "blocks" if judge["blocks"] else "comments only"
        console.print(
            Text(f"judge {judge['rubric']} ({path}): {status}: {judge['reason']}; {effect}")
        )
