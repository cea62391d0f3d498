"""`redline run`: every case N times against the pinned model; exit code says green or red.

Everything that can be wrong with the input (suites, config, model alias, API key) is
reported before the first request, with exit code 2. Ctrl-C stops cleanly: finished
samples are stored and `--resume RUN_ID` completes the run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from redline.ci.shard import parse_shard
from redline.cli import ExitCode
from redline.cli.compare import comparison_exit, print_comparison
from redline.cli.output import make_console
from redline.cli.show import case_table, verdict_breakdown
from redline.config import Config, load_config
from redline.deciding.compare import compare_runs
from redline.deciding.quarantine import quarantined_cases
from redline.errors import StoreMissing, UsageError, relpath
from redline.presentation import result_headline_style
from redline.running.against import against_options
from redline.running.budget import budget_note, estimate_run
from redline.running.exchange import check_out_dir, export_run
from redline.running.options import RunOptions, resume_options
from redline.running.outcome import MAX_NON_CONTENT_SHARE, add_counts, non_content_share
from redline.running.records import CaseOutcome, CaseRecord, RunKind, RunRecord, RunResult
from redline.running.runner import RunProgress, run_model, run_suites, select_cases
from redline.running.seeds import seed_warning
from redline.running.store import RunStore, new_run_id
from redline.running.usage import usage_of, usage_summary, usd
from redline.running.verdicts import VERDICT_ORDER, Verdict
from redline.suite.cases import Suite, load_suites
from redline.textsafe import escape_output

_EXIT = {
    RunResult.GREEN: ExitCode.GREEN,
    RunResult.RED: ExitCode.RED,
    RunResult.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}
INTERRUPTED_EXIT = 130
_STOPPING = "stopping: finished samples are stored; cancelling the requests in flight"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        description="Run every case of the given suites (default: the configured suites) "
        "N times against the pinned model. Exit 0 green, 1 red, 2 usage/config error "
        "(nothing called), 3 inconclusive.",
    )
    _add_selection_arguments(parser)
    _add_continuation_arguments(parser)
    _add_output_arguments(parser)
    parser.set_defaults(handler=_run)


def _add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """What runs: suites, cases, tier, samples, model, shard, judges, money."""
    parser.add_argument(
        "suite_dirs",
        metavar="SUITE_DIR",
        nargs="*",
        type=Path,
        help="suite folders to run (default: the configured suites, e.g. cases/)",
    )
    parser.add_argument(
        "--case", dest="cases", action="append", default=[], metavar="ID", help="only this case"
    )
    parser.add_argument(
        "--samples", type=_positive, metavar="N", help="a fixed number of samples per case"
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="sequential sampling for every case: start with 3 samples and draw more, up to "
        "10, only while the case is undecided against its own bar",
    )
    parser.add_argument("--tier", choices=("contract", "quality"), help="only this tier")
    parser.add_argument("--model", metavar="ALIAS", help="run on another pinned alias")
    parser.add_argument(
        "--concurrency",
        type=_positive,
        metavar="N",
        help="samples in flight at once (default: config concurrency; the local model runs one)",
    )
    parser.add_argument("--shard", metavar="K/N", help="run only shard K of N (CI matrices)")
    parser.add_argument(
        "--judge", action="store_true", help="also run rubric judges (Layer 2, one call per sample)"
    )
    parser.add_argument(
        "--judge-blocks",
        action="store_true",
        help="let calibrated (trusted) judges fail samples; advisory judges never do",
    )
    parser.add_argument(
        "--budget",
        type=usd_amount,
        metavar="USD",
        help="stop scheduling samples once this many US dollars are spent "
        "(default: max_run_cost in the config); the run is then inconclusive",
    )
    parser.add_argument(
        "--yes", action="store_true", help="do not ask before a run estimated over the threshold"
    )


def _add_continuation_arguments(parser: argparse.ArgumentParser) -> None:
    """Runs that start from a stored run: resume, retry, replay, against."""
    parser.add_argument("--resume", metavar="RUN_ID", help="run the missing samples of a run")
    parser.add_argument(
        "--retry-transport",
        metavar="RUN_ID",
        help="draw again only the samples of a run that failed in transport (connection, "
        "timeout, 5xx after retries), keeping the first attempts as evidence; refused when "
        "the prompt, model or cases changed since",
    )
    parser.add_argument(
        "--with-truncated",
        action="store_true",
        help="with --retry-transport: also draw again the samples cut off at max_tokens",
    )
    parser.add_argument(
        "--replay", metavar="RUN_ID", help="re-score a stored run's outputs; calls no model"
    )
    parser.add_argument(
        "--against",
        metavar="RUN_ID",
        help="run that run's cases (same samples, same inputs) on --model and compare",
    )


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, metavar="DIR", help="also export the run to DIR")
    parser.add_argument("--quiet", action="store_true", help="plain progress lines, no live bar")


def usd_amount(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in US dollars") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive amount in US dollars")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _run(args: argparse.Namespace) -> int:
    config = load_config()
    _check_flags(args)
    options, paths = _options(args, config)
    if args.out is not None:
        check_out_dir(args.out)  # before any request, not after the run
    suites = load_suites(paths, config)
    console = make_console()
    if options.replay is None:
        warning = seed_warning(suites, config, run_model(suites, config, options))
        if warning:
            console.print(Text(f"warning: {warning}", style="yellow"))
    with RunStore.open(config.store_path) as store:
        reference = None
        if args.against:
            reference = store.run(args.against)
            options = against_options(store, reference, suites, options)
        if options.replay is None:
            options = check_cost(console, config, store, suites, options, assume_yes=args.yes)
        live = sys.stdout.isatty() and not args.quiet
        replay = options.replay
        reporter = _LiveProgress(console, replay) if live else PlainProgress(replay)
        try:
            with reporter:
                record = run_suites(suites, config, store, options, reporter.update)
        except KeyboardInterrupt:
            return _interrupted(store, options.resume or options.run_id)
        _report_run(console, store, record, suites, options)
        if args.out is not None:
            export_run(store, record.id, args.out)
            console.print(Text(f"exported to {args.out}"))
        if reference is not None:
            return _against_report(console, config, store, reference, record)
    assert record.result is not None
    return int(_EXIT[record.result])


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse flags that cannot go together, before anything is read or sent."""
    if args.with_truncated and not args.retry_transport:
        raise UsageError("--with-truncated goes with --retry-transport RUN_ID")
    if args.retry_transport:
        if args.resume or args.replay:
            raise UsageError("--retry-transport cannot be combined with --resume or --replay")
        args.resume = args.retry_transport
    if args.resume and args.replay:
        raise UsageError("--resume and --replay cannot be combined")
    if args.judge_blocks and not args.judge:
        raise UsageError("--judge-blocks needs --judge")
    if args.adaptive and args.samples:
        raise UsageError(
            "--adaptive draws as many samples as each case needs; --samples fixes the count: "
            "use one of them"
        )


def _interrupted(store: RunStore, run_id: str | None) -> int:
    """What Ctrl-C leaves: the finished samples kept, and how to complete the run."""
    stored = len(store.sample_keys(run_id)) if run_id else 0
    print(
        f"redline: interrupted; {stored} finished sample(s) stored in run {run_id}. "
        f"Complete it with: redline run --resume {run_id}",
        file=sys.stderr,
    )
    return INTERRUPTED_EXIT


def _report_run(
    console: Console,
    store: RunStore,
    record: RunRecord,
    suites: Sequence[Suite],
    options: RunOptions,
) -> None:
    """The summary of a finished run, what it spent, and for a replay what it could not score."""
    cases = store.cases(record.id)
    _print_summary(console, record, cases)
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


def _against_report(
    console: Console, config: Config, store: RunStore, reference: RunRecord, record: RunRecord
) -> int:
    """The comparison with the reference run; its exit code unless this run is inconclusive."""
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


def check_cost(
    console: Console,
    config: Config,
    store: RunStore,
    suites: Sequence[Suite],
    options: RunOptions,
    *,
    assume_yes: bool = False,
) -> RunOptions:
    """Print the estimated cost of a priced run, ask on a terminal when it is over
    `confirm_cost_above`, and return `options` with the budget that applies (`--budget`,
    else `max_run_cost`). Raises UsageError when the user declines or a budget cannot be
    measured (no price for a paid model)."""
    estimate = estimate_run(suites, config, store, options)
    model = run_model(suites, config, options)
    budget = options.budget if options.budget is not None else config.max_run_cost
    if estimate.price is None:
        if model.provider == "local":
            return replace(options, budget=None)
        if options.budget is not None:
            raise UsageError(
                f"--budget needs a price for {model.id}: add "
                f"{config.table('prices', chr(34) + model.id + chr(34))} with "
                "input_per_mtok and output_per_mtok (US dollars per million tokens)"
            )
        console.print(Text(estimate.describe(), style="dim"))
        if budget is not None:
            console.print(
                Text(f"max_run_cost cannot apply to {model.id} without a price", style="yellow")
            )
        return replace(options, budget=None)
    console.print(Text(estimate.describe()))
    cost = estimate.cost or 0.0
    if budget is not None:
        console.print(Text(f"budget: {usd(budget)}"))
        if cost > budget:
            console.print(
                Text(
                    f"the estimate is over the budget: the run will stop before it spends more "
                    f"than {usd(budget)} and be inconclusive",
                    style="yellow",
                )
            )
    threshold = config.confirm_cost_above
    on_terminal = sys.stdin.isatty() and sys.stdout.isatty()
    if threshold is not None and cost > threshold and not assume_yes and on_terminal:
        answer = console.input(
            f"The estimate is over {usd(threshold)} (confirm_cost_above). Run it? [y/N] ",
            markup=False,
        )
        if answer.strip().lower() not in ("y", "yes"):
            raise UsageError("not started: nothing was sent. Lower --samples or pass --yes")
    return replace(options, budget=budget)


def _stored_run(config: Config, run_id: str) -> RunRecord:
    if not config.store_path.exists():
        raise StoreMissing(config.store_path, "nothing to resume or replay")
    with RunStore.open(config.store_path) as store:
        return store.run(run_id)


def _retry_verdicts(args: argparse.Namespace) -> tuple[Verdict, ...]:
    if not args.retry_transport:
        return ()
    if args.with_truncated:
        return (Verdict.TRANSPORT, Verdict.TRUNCATED)
    return (Verdict.TRANSPORT,)


def _options(args: argparse.Namespace, config: Config) -> tuple[RunOptions, list[Path]]:
    """Run options and suite folders from the command line (or the resumed run)."""
    if args.resume:
        flag = "--retry-transport" if args.retry_transport else "--resume"
        _refuse_given(args, _RESUME_FIXES, flag, "continues a run with its own options")
        run = _stored_run(config, args.resume)
        return resume_options(
            run, config, _retry_verdicts(args), args.concurrency, budget=args.budget
        )
    paths = _suite_paths(args, config)
    options = RunOptions(
        suites=tuple(relpath(p, config.root) for p in paths),
        samples=args.samples,
        case_ids=tuple(args.cases),
        tier=args.tier,
        model_alias=args.model,
        concurrency=args.concurrency,
        kind=RunKind.REPLAY if args.replay else RunKind.RUN,
        replay=args.replay,
        judge=args.judge,
        judge_blocks=args.judge_blocks,
        adaptive=args.adaptive,
        shard=parse_shard(args.shard) if args.shard else None,
        run_id=new_run_id(),
        budget=args.budget,
    )
    return options, paths


#: Flags a resumed run takes from its stored options, and those `--against` takes from its
#: reference run: (flag, argparse destination).
_RESUME_FIXES = (
    ("SUITE_DIR", "suite_dirs"),
    ("--case", "cases"),
    ("--samples", "samples"),
    ("--tier", "tier"),
    ("--model", "model"),
    ("--shard", "shard"),
    ("--against", "against"),
    ("--adaptive", "adaptive"),
)
_AGAINST_FIXES = (
    ("--replay", "replay"),
    ("--case", "cases"),
    ("--samples", "samples"),
    ("--tier", "tier"),
    ("--shard", "shard"),
)


def _refuse_given(
    args: argparse.Namespace, fixed: Sequence[tuple[str, str]], flag: str, why: str
) -> None:
    given = [name for name, dest in fixed if getattr(args, dest)]
    if given:
        raise UsageError(f"{flag} {why}; drop {', '.join(given)}")


def _suite_paths(args: argparse.Namespace, config: Config) -> list[Path]:
    """The suite folders named, else those of the run replayed or run against, else the
    configured ones."""
    stored: list[Path] = []
    if args.against:
        _refuse_given(
            args,
            _AGAINST_FIXES,
            "--against",
            f"runs exactly the cases and samples of run {args.against}",
        )
        if not args.model:
            raise UsageError("--against needs --model ALIAS: the pinned model to run the cases on")
        reference = _stored_run(config, args.against)
        stored = RunOptions.from_stored(reference.args).suite_paths(config)
    elif args.replay:
        if args.samples or args.model:
            raise UsageError("--replay re-scores the stored samples: drop --samples and --model")
        parent = _stored_run(config, args.replay)
        stored = RunOptions.from_stored(parent.args).suite_paths(config)
    return list(args.suite_dirs) or stored or list(config.suites)


def _counts_text(p: RunProgress) -> str:
    return " ".join(f"{v} {p.verdicts.get(v, 0)}" for v in VERDICT_ORDER if p.verdicts.get(v))


def _duration(seconds: float) -> str:
    """`45s`, `3m 05s`, `1h 02m`: short enough for a progress line."""
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _rate_text(p: RunProgress) -> str:
    """Samples per second, or seconds per sample when slower than one a second."""
    if p.done == 0:
        return "–"
    if p.rate >= 1:
        return f"{p.rate:.1f} samples/s"
    return f"{p.elapsed_s / p.done:.1f} s/sample"


def _eta_text(p: RunProgress) -> str:
    eta = p.eta_s
    return "ETA –" if eta is None else f"ETA {_duration(eta)}"


def _now_text(p: RunProgress) -> str:
    """The case in flight (the oldest), and how many others are."""
    if not p.running:
        return ""
    more = f" (+{len(p.running) - 1} more)" if len(p.running) > 1 else ""
    return f"now {escape_output(p.running[0], keep_layout=False)}{more}"


def _start_line(p: RunProgress, replay: str | None) -> str:
    if replay is not None:
        return (
            f"run {p.run_id}: replaying run {replay}: re-scoring {p.total} stored sample(s) "
            "with today's assertions; no model is called"
        )
    return f"run {p.run_id}: {p.total} sample(s) to run"


class PlainProgress:
    """One line per tenth of the run (and the last), and one when a slow run goes quiet.

    For CI logs and pipes: samples done, verdict counts, elapsed time, the observed rate,
    the time left at that rate, and the case in flight.
    """

    #: A line at least this often (seconds) while samples finish, however slowly.
    HEARTBEAT_S = 30.0

    def __init__(self, replay: str | None = None) -> None:
        self._next = self._step = 1
        self._replay = replay
        self._last_line = 0.0

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, p: RunProgress) -> None:
        if p.stopping:
            print(_STOPPING, file=sys.stderr, flush=True)
            return
        if p.done == 0 and p.last is None and not p.running:
            print(_start_line(p, self._replay), flush=True)
            self._next = self._step = max(1, math.ceil(p.total / 10))
            self._last_line = time.monotonic()
            return
        if not p.running and p.done < p.total:
            return  # between two samples: the next one's start tells which case is running
        now = time.monotonic()
        due = p.done >= self._next or now - self._last_line >= self.HEARTBEAT_S
        if p.done > 0 and (due or p.done == p.total):
            if p.done >= self._next:
                self._next = p.done + self._step
            self._last_line = now
            parts = [
                f"  {p.done}/{p.total} samples",
                _counts_text(p),
                _duration(p.elapsed_s),
                _rate_text(p),
            ]
            if p.done < p.total:
                parts += [_eta_text(p), _now_text(p)]
            print("  ".join(part for part in parts if part), flush=True)


class _LiveProgress:
    """A rich progress bar: samples, verdict counts, elapsed, rate, ETA, the case in flight."""

    def __init__(self, console: Console, replay: str | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]run {task.fields[run_id]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[eta]}"),
            TextColumn("{task.fields[now]}"),
            console=console,
            transient=False,
        )
        self._task: Any = None
        self._last = 0.0
        self._replay = replay

    def __enter__(self) -> _LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(self, p: RunProgress) -> None:
        if p.stopping:
            self._progress.console.print(Text(_STOPPING, style="yellow"))
            return
        if self._task is None:
            self._progress.console.print(Text(_start_line(p, self._replay)))
            self._task = self._progress.add_task(
                "run", total=p.total, run_id=p.run_id, counts="", rate="", eta="", now=""
            )
        now = time.monotonic()
        if p.done != p.total and now - self._last < 0.1:
            return
        self._last = now
        self._progress.update(
            self._task,
            completed=p.done,
            counts=verdict_breakdown(p.verdicts).markup,
            rate=_rate_text(p),
            eta=_eta_text(p) if p.done < p.total else "",
            # Text, not markup: a case id is the user's text and may hold brackets.
            now=Text(_now_text(p)).markup if p.done < p.total else "",
        )


def _print_summary(console: Console, record: RunRecord, cases: Sequence[CaseRecord]) -> None:
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
    console.print(case_table(cases, title=f"run {record.id} ({record.kind})"))
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
    failed = sum(c.result is CaseOutcome.FAIL for c in cases)
    undecided = sum(c.result is CaseOutcome.INCONCLUSIVE for c in cases)
    marginal = sum(c.result is CaseOutcome.MARGINAL for c in cases)
    line = Text()
    line.append(f"run {record.id}: ", style="bold")
    line.append(str(record.result), style=result_headline_style(record.result))
    line.append(
        f"  {len(cases)} case(s): {len(cases) - failed - undecided - marginal} pass, "
        f"{failed} fail, {undecided} inconclusive"
        + (f", {marginal} marginal" if marginal else "")
        + "  samples: "
    )
    line.append_text(verdict_breakdown(totals))
    return line


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
