"""`redline cases import data.csv|data.jsonl --map ...`: many cases from a table."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.cli import ExitCode
from redline.config import load_config
from redline.intake.casefile import parse_map, read_table, row_cases, write_cases


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "cases",
        description="Write one case file per row of a CSV or JSONL table; a row that would "
        "make an invalid case is refused with its row number, the others are written.",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    imp = actions.add_parser("import", description="one case per row")
    imp.add_argument("table", type=Path, metavar="FILE", help="data.csv or data.jsonl")
    imp.add_argument("--suite", type=Path, default=Path("."), help="the suite folder to write to")
    imp.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="TARGET=COLUMN",
        help="id, golden, vars.NAME or provenance.KEY from a column (default: columns are vars)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    mapping = parse_map(args.map)
    rows = read_table(args.table)
    cases, refused = row_cases(rows, mapping, args.table.name)
    written = write_cases(args.suite, cases, load_config(args.suite))
    for row, why in sorted(refused + written.refused):
        print(f"{args.table}: row {row} refused: {why}")
    print(f"wrote {len(written.paths)} case(s) to {args.suite}")
    return ExitCode.USAGE if refused or written.refused else ExitCode.GREEN
