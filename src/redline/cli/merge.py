"""`redline merge DIR... [--out DIR] [--import]`: join the exports of a sharded run."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from redline.ci.shard import merge_exports, write_merged
from redline.cli.output import make_console
from redline.config import load_config
from redline.errors import UsageError
from redline.running.store import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "merge",
        description="Join the exports of `redline run --shard K/N` (one folder per shard, "
        "e.g. CI artifacts) into one run. Refuses shards of different commits, models or "
        "inputs, a case in two shards, and a split with a shard missing (unless "
        "--allow-missing). A shard that owned no case exports an empty result and merges "
        "like any other.",
    )
    parser.add_argument(
        "folders",
        metavar="DIR",
        nargs="+",
        type=Path,
        help="export folders (results.json + samples.jsonl), one per shard",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="write the merged export here")
    parser.add_argument(
        "--import",
        dest="import_",
        action="store_true",
        help="add the merged run to the local store",
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="merge even when a shard K/N has no export (the merged run records which)",
    )
    parser.set_defaults(handler=_merge)


def _merge(args: argparse.Namespace) -> int:
    if args.out is None and not args.import_:
        raise UsageError("say where the merged run goes: --out DIR, --import, or both")
    merged = merge_exports(args.folders, allow_missing=args.allow_missing)
    if args.import_:
        config = load_config()
        with RunStore.open(config.store_path) as store:
            samples = write_merged(merged, out=args.out, store=store)
    else:
        samples = write_merged(merged, out=args.out, store=None)
    run = merged.run
    console = make_console()
    console.print(
        Text(
            f"merged {len(merged.shards)} shard(s) ({', '.join(merged.shards)}) into run {run.id}: "
            f"{len(merged.cases)} cases, {samples} samples, result {run.result}"
        )
    )
    if merged.missing:
        console.print(
            Text(f"partial: no export of shard {', '.join(merged.missing)}; its cases are missing")
        )
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0
