"""`redline export RUN_ID --out DIR` and `redline import PATH...`: runs as CI artifacts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from redline.cli import ExitCode
from redline.cli.show import require_store
from redline.config import load_config
from redline.errors import RunAlreadyStored, UsageError
from redline.running.exchange import (
    RESULTS_FILE,
    SAMPLES_FILE,
    add_export,
    export_paths,
    export_run,
    read_exports,
)
from redline.running.store import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        description=f"Write a stored run to DIR as {RESULTS_FILE} (summary, cases, manifest) "
        f"and {SAMPLES_FILE} (every raw sample with its assertion results).",
    )
    export.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    export.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="folder to write (created when missing; existing export files are replaced)",
    )
    export.set_defaults(handler=_export)
    load = sub.add_parser(
        "import",
        description="Load runs into the local store from `redline export` folders, zips of "
        "them (a CI artifact as downloaded), or folders holding several of either. One "
        "export whose run is already stored is refused; among several, stored runs are "
        "skipped, so importing the same folder again adds nothing twice.",
    )
    load.add_argument("paths", type=Path, nargs="+", metavar="PATH", help="folder or zip")
    load.set_defaults(handler=_import)


def _export(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        run = store.run(args.run_id)
        export_run(store, run.id, args.out)
    print(f"exported run {run.id} to {args.out}")
    return 0


def _import(args: argparse.Namespace) -> int:
    """Every export found is read and imported on its own: one bad export loses no other."""
    sources: list[Path] = []
    problems: list[str] = []
    for path in args.paths:
        try:
            sources += export_paths(path)
        except UsageError as exc:
            problems.append(str(exc))
    config = load_config()
    imported = skipped = 0
    with RunStore.open(config.store_path) as store:
        for source in sources:
            try:
                exports = read_exports(source)
            except UsageError as exc:
                problems.append(str(exc))
                continue
            for exported in exports:
                single = len(sources) == 1 and len(exports) == 1
                try:
                    run = add_export(store, exported)
                except RunAlreadyStored as exc:
                    if single:
                        raise
                    print(f"skipped run {exc.run_id} from {exported.where}: already in the store")
                    skipped += 1
                    continue
                imported += 1
                print(
                    f"imported run {run.id} ({run.kind}, {run.result or run.status}, "
                    f"{len(exported.samples)} samples) from {exported.where}"
                )
    if imported + skipped > 1:
        print(f"{imported} run(s) imported, {skipped} already in the store")
    for problem in problems:
        print(f"redline: error: {problem}", file=sys.stderr)
    return ExitCode.USAGE if problems else ExitCode.GREEN
