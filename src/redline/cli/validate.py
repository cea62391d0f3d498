"""`redline validate [PATH...]`: every problem in every suite, before any model is called."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from redline.cli import ExitCode, positive
from redline.config import load_config
from redline.errors import Problem, ProblemsError
from redline.machine import usable_cores
from redline.provider_options import (
    HTTP_TARGET_OPTIONS,
    PROVIDER_KINDS,
    TARGET_OPTIONS,
    Option,
    toml_value,
)
from redline.providers.factory import request_problems
from redline.running.options import RunOptions
from redline.running.planning import mixed_models, samples_for
from redline.suite.cases import PARALLEL_FILES, Suite, check_suites
from redline.suite.parsecache import CACHE_FILE, ParseCache
from redline.suite.shards import parse_shard
from redline.vocabulary.sequential import SequentialPlan


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "validate",
        description="Load every suite and case, report every problem with file:line:column "
        "(exit 2), or print a summary (exit 0).",
        epilog=_provider_options(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="suite folders or folders of suites (default: the config's suites, e.g. cases/)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="check only the case files `redline run --shard K/N` reads (and the suite files)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="read every case file, even those unchanged since the last check (the cache of "
        f"what each file held is .redline/{CACHE_FILE}, beside the store)",
    )
    parser.add_argument(
        "--jobs",
        type=positive,
        metavar="N",
        help=f"processes reading case files when there are {PARALLEL_FILES:,} or more "
        f"(default: this machine's cores, at most {MAX_JOBS})",
    )
    parser.set_defaults(handler=run)


#: The most processes a check starts by itself.
MAX_JOBS = 4


def _provider_options() -> str:
    """Every option of each provider type and of a suite's target, as they are checked."""
    lines = ["provider options, by type (a [providers.NAME] table; checked like the rest):"]
    for kind in PROVIDER_KINDS.values():
        lines.append(f'  type = "{kind.name}"')
        lines += [f"    {o.key:<18} {o.meaning}; {o.expected}; {_default(o)}" for o in kind.options]
    lines.append("target options (suite.yaml `target:`, your own code; see docs/targets.md):")
    for where, options in (("target", TARGET_OPTIONS), ("target.http", HTTP_TARGET_OPTIONS)):
        lines.append(f"  {where}:")
        lines += [f"    {o.key:<18} {o.meaning}; {o.expected}; {_default(o)}" for o in options]
    return "\n".join(lines)


def _default(option: Option) -> str:
    if option.default is None:
        return f"default: {option.default_words}" if option.default_words else "unset by default"
    words = f" ({option.default_words})" if option.default_words else ""
    return f"default {toml_value(option.default)}{words}"


def run(args: argparse.Namespace) -> int:
    config = load_config()
    paths: list[Path] = list(args.paths) or list(config.suites)
    environment = [Problem("before any request", 0, 0, p) for p in request_problems(config)]
    shard = parse_shard(args.shard) if args.shard else None
    cache = ParseCache(config.store_path.parent / CACHE_FILE if not args.no_cache else None)
    try:
        jobs = args.jobs or min(usable_cores(), MAX_JOBS)
        checked = check_suites(paths, config, cache, shard=shard, jobs=jobs)
    except ProblemsError as exc:
        raise ProblemsError([*exc.problems, *environment]) from None
    if environment:
        raise ProblemsError(environment)
    suites = [entry.suite for entry in checked]
    every = [case for entry in checked for case in entry.cases]
    options = RunOptions()  # what a plain `redline run` asks of each case
    plans: list[tuple[int, SequentialPlan | None]] = []
    for entry in checked:
        suite, cases = entry.suite, entry.cases
        planned = [samples_for(options, c) for c in cases]
        plans.extend(planned)
        alias = suite.model
        pinned = config.models[alias].id if alias in config.models else alias
        answered = f"model {alias} = {pinned}"
        if suite.target is not None:
            model = f"model {alias} = {pinned}" if alias else "its model reported per answer"
            answered = f"target {suite.target.label}, {model}"
        print(
            f"{suite.name}: {len(cases)} cases, "
            f"{sum(c.assertions for c in cases)} assertions, "
            f"{answered}, {_samples_text(suite, planned)}, tier {suite.tier}"
        )
    most = sum(n for n, _ in plans)
    per_run = f"up to {most}" if any(p is not None for _, p in plans) else f"{most}"
    share = f" of shard {shard[0]}/{shard[1]}" if shard else ""
    print(
        f"ok: {len(suites)} suite(s), {len(every)} case(s){share}, "
        f"{sum(c.assertions for c in every)} assertion(s), {per_run} samples per run"
    )
    mixed = mixed_models(suites)
    if mixed is not None:
        # Each suite is valid; `redline run` over all of them at once is refused.
        print(f"note: {mixed}")
    return ExitCode.GREEN


def _samples_text(suite: Suite, plans: Sequence[tuple[int, SequentialPlan | None]]) -> str:
    """`5 samples`, or how far sequentially sampled cases may go (a maximum, not a count):
    `plans` are the suite's cases' `samples_for`."""
    sequential = [n for n, plan in plans if plan]
    if not sequential:
        return f"{suite.samples} samples"
    if len(sequential) == len(plans) and set(sequential) == {suite.samples}:
        return f"up to {suite.samples} samples (sequential)"
    return (
        f"{suite.samples} samples, {len(sequential)} case(s) sequential "
        f"(up to {max(sequential)} samples)"
    )
