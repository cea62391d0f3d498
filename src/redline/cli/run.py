"""`redline run`: every case N times against the pinned model; exit code says green or red.

Everything that can be wrong with the input (suites, config, model alias, API key) is
reported before the first request, with exit code 2. Ctrl-C stops cleanly: finished
samples are stored and `--resume RUN_ID` completes the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from redline.casemodel import TIERS
from redline.cli import ExitCode, positive
from redline.cli.output import make_console
from redline.cli.progress import LiveProgress, PlainProgress
from redline.config import DEFAULT_CONCURRENCY, Config, load_config
from redline.errors import BatchNotDone, StoreMissing, UsageError, relpath
from redline.provider_options import IN_FLIGHT_PER_SLOT, default_slots
from redline.running.exchange import check_out_dir, export_run
from redline.running.options import RunOptions, resume_options
from redline.running.planning import run_model
from redline.running.runner import estimate_run, run_suites
from redline.running.seeds import seed_warning
from redline.running.store import RunStore, new_run_id
from redline.running.usage import usd
from redline.suite.cases import Suite, load_suites
from redline.vocabulary.records import RunKind, RunRecord, RunResult
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import Verdict

_EXIT = {
    RunResult.GREEN: ExitCode.GREEN,
    RunResult.RED: ExitCode.RED,
    RunResult.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}
INTERRUPTED_EXIT = 130


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        description="Run every case of the given suites (default: the configured suites) "
        "N times against the pinned model. Exit 0 green, 1 red, 2 usage/config error "
        "(nothing called), 3 inconclusive.",
    )
    _add_selection_arguments(parser)
    _add_batch_arguments(parser)
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
        "--samples", type=positive, metavar="N", help="a fixed number of samples per case"
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="sequential sampling for every case: start with 3 samples and draw more, up to "
        "10, only while the case is undecided against its own bar",
    )
    parser.add_argument("--tier", choices=TIERS, help="only this tier")
    parser.add_argument("--model", metavar="ALIAS", help="run on another pinned alias")
    parser.add_argument(
        "--concurrency",
        type=positive,
        metavar="N",
        help=f"samples in flight at once (default: the config's concurrency, "
        f"{DEFAULT_CONCURRENCY}); the local model takes at most {IN_FLIGHT_PER_SLOT} per "
        f"parallel slot ({IN_FLIGHT_PER_SLOT * default_slots()} with this machine's default "
        f"of {default_slots()} slots); an OpenAI or Anthropic run starts there and rides "
        "the rate limit up to the provider's max_concurrency (adaptive_concurrency)",
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


def _add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    """Through the provider's batch API (OpenAI, Anthropic): half price, answers within 24 h."""
    parser.add_argument(
        "--batch",
        action="store_true",
        help="send the run's requests through the provider's batch API (OpenAI's Batch API, "
        "Anthropic's Message Batches) at its batch price; sequential sampling plays as rounds "
        "(default: the provider's `batch` setting)",
    )
    parser.add_argument(
        "--no-batch", action="store_true", help="not through the batch API, whatever `batch` says"
    )
    parser.add_argument(
        "--batch-if-supported",
        action="store_true",
        help="the batch API when the run's provider has one, else an ordinary run (the "
        "nightly workflow's choice)",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="with a batch: submit it and end (exit 3 while it is pending); "
        "`redline run --resume RUN_ID` collects it later",
    )
    parser.add_argument(
        "--wait-limit",
        type=_seconds,
        metavar="SECONDS",
        help="with a batch: wait at most this long for it, then end as --no-wait does",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds, at least 0")
    return value


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


def _run(args: argparse.Namespace) -> int:
    config = load_config()
    _check_flags(args)
    options, paths = _options(args, config)
    if args.out is not None:
        check_out_dir(args.out)  # before any request, not after the run
    # A shard reads only its own case files; `--case` names ids, known only once parsed.
    shard = options.shard if not options.case_ids else None
    suites = load_suites(paths, config, shard=shard)
    console = make_console()
    if _nothing_of_the_tier(suites, options):
        # A required CI check on a project whose suites are all of the other tier: green.
        console.print(Text(f"no {options.tier} cases in {_names(suites)}: nothing to run"))
        return 0
    if options.replay is None:
        warning = seed_warning(suites, config, run_model(suites, config, options))
        if warning:
            console.print(Text(f"warning: {warning}", style="yellow"))
    with RunStore.open(config.store_path) as store:
        reference = None
        if args.against:
            from redline.deciding.against import against_options  # loads the comparison

            reference = store.run(args.against)
            options = against_options(store, reference, suites, options)
        if options.replay is None:
            options = check_cost(console, config, store, suites, options, assume_yes=args.yes)
        live = sys.stdout.isatty() and not args.quiet
        replay = options.replay
        reporter = LiveProgress(console, replay) if live else PlainProgress(replay)
        try:
            with reporter:
                record = run_suites(suites, config, store, options, reporter.update)
        except KeyboardInterrupt:
            return _interrupted(store, options.resume or options.run_id)
        except BatchNotDone as pending:
            return _batch_not_done(store, pending, args.out)
        from redline.cli import run_summary  # after the run: not on the first request's path

        run_summary.report_run(console, store, record, suites, options)
        if args.out is not None:
            export_run(store, record.id, args.out)
            console.print(Text(f"exported to {args.out}"))
        if reference is not None:
            return run_summary.against_report(console, config, store, reference, record)
    assert record.result is not None
    return int(_EXIT[record.result])


def _nothing_of_the_tier(suites: Sequence[Suite], options: RunOptions) -> bool:
    """`--tier T` over suites that hold no case of tier T (and no --case asked for one).

    Not for a shard: it holds only its own cases, and exports its empty run for the merge.
    """
    if (
        options.tier is None
        or options.case_ids
        or options.resume
        or options.replay
        or options.shard
    ):
        return False
    return not any(case.tier == options.tier for suite in suites for case in suite.cases)


def _names(suites: Sequence[Suite]) -> str:
    names = [suite.name for suite in suites]
    return ("suite " if len(names) == 1 else "suites ") + ", ".join(names)


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
    if args.batch and args.no_batch:
        raise UsageError("--batch and --no-batch contradict each other: use one of them")
    if args.no_wait and args.wait_limit is not None:
        raise UsageError("--no-wait is --wait-limit 0: use one of them")
    if args.adaptive and args.samples:
        raise UsageError(
            "--adaptive draws as many samples as each case needs; --samples fixes the count: "
            "use one of them"
        )


def _batch_not_done(store: RunStore, error: BatchNotDone, out: Path | None) -> int:
    """A batch still pending (or ended unanswered): what is stored, how to collect the rest;
    `--out DIR` gets `pending.json` (the run and its batches) for a later CI job."""
    stored = len(store.sample_keys(error.run_id))
    print(f"redline: {error} ({stored} sample(s) stored in run {error.run_id})", file=sys.stderr)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        batches = [
            {
                "id": b.batch_id,
                "provider": b.provider,
                "status": b.status,
                "ended": b.ended,
                "counts": dict(b.counts),
                "requests": len(b.requests),
            }
            for b in store.batches(error.run_id)
        ]
        state = {"run_id": error.run_id, "stored_samples": stored, "batches": batches}
        (out / PENDING_FILE).write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    return int(ExitCode.INCONCLUSIVE)


#: What `--out DIR` holds instead of an export while a batch is pending.
PENDING_FILE = "pending.json"


def _interrupted(store: RunStore, run_id: str | None) -> int:
    """What Ctrl-C leaves: the finished samples kept, and how to complete the run."""
    stored = len(store.sample_keys(run_id)) if run_id else 0
    print(
        f"redline: interrupted; {stored} finished sample(s) stored in run {run_id}. "
        f"Complete it with: redline run --resume {run_id}",
        file=sys.stderr,
    )
    return INTERRUPTED_EXIT


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
            run,
            config,
            _retry_verdicts(args),
            args.concurrency,
            budget=args.budget,
            batch_wait_s=_batch_wait(args),
        )
    paths = _suite_paths(args, config)
    options = RunOptions(
        suites=tuple(relpath(p, config.root) for p in paths),
        samples=args.samples,
        case_ids=tuple(args.cases),
        tier=None if args.tier is None else Tier(args.tier),
        model_alias=args.model,
        concurrency=args.concurrency,
        kind=RunKind.REPLAY if args.replay else RunKind.RUN,
        replay=args.replay,
        judge=args.judge,
        judge_blocks=args.judge_blocks,
        adaptive=args.adaptive,
        shard=_shard(args.shard),
        run_id=new_run_id(),
        budget=args.budget,
        batch=True if args.batch else False if args.no_batch else None,
        batch_if_supported=args.batch_if_supported,
        batch_wait_s=_batch_wait(args),
    )
    return options, paths


def _batch_wait(args: argparse.Namespace) -> float | None:
    return 0.0 if args.no_wait else args.wait_limit


def _shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    from redline.suite.shards import parse_shard  # CI only: kept off a plain run's start-up

    return parse_shard(text)


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
    ("--batch", "batch"),
    ("--no-batch", "no_batch"),
    ("--batch-if-supported", "batch_if_supported"),
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
