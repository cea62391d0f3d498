"""`redline init [--force]`: scaffold a starter suite and the CI workflow here."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from redline.scaffold import scaffold


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "init",
    )
    parser.add_argument("--dir", type=Path, default=Path("."), help="repository root (default .)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist")
    parser.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    written = scaffold(args.dir, force=args.force)
    console = Console()
    for path in written:
        print(f"wrote {path}")
    console.print(
        Text(
            "next: `redline validate`, then `redline run`; add .redline/ to .gitignore "
            "and commit the rest"
        )
    )
    return 0
