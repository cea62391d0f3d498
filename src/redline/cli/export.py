"""`redline export RUN_ID --out DIR` and `redline import DIR`: runs as CI artifacts."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.cli.show import require_store
from redline.config import load_config
from redline.exchange import RESULTS_FILE, SAMPLES_FILE, export_run, import_run
from redline.store import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        help=f"write a run as {RESULTS_FILE} + {SAMPLES_FILE}",
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
        help="load an exported run (e.g. a CI artifact) into the local store",
        description="Load a `redline export` folder into the local store; a run id "
        "already stored is refused.",
    )
    load.add_argument(
        "folder", type=Path, metavar="DIR", help=f"a folder holding {RESULTS_FILE} + {SAMPLES_FILE}"
    )
    load.set_defaults(handler=_import)


def _export(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        run = store.run(args.run_id)
        export_run(store, run.id, args.out)
    print(f"exported run {run.id} to {args.out}")
    return 0


def _import(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(config.store_path) as store:
        run = import_run(store, args.folder)
        n = len(store.sample_keys(run.id))
    print(f"imported run {run.id} ({run.kind}, {run.result or run.status}, {n} samples)")
    return 0
