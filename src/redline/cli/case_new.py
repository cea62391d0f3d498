"""`redline case new --from FILE`: a case file from a logged exchange (production traces)."""

from __future__ import annotations

import argparse
from pathlib import Path

from redline.cli import ExitCode
from redline.config import load_config
from redline.errors import UsageError
from redline.intake.casefile import case_id_for, exchange_case, write_cases
from redline.intake.traces import UnreadableTrace, read_exchanges


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "case",
        description="Write case files from logged exchanges: an OpenAI or Anthropic "
        "request/response pair (JSON), a JSONL log of them, or OTLP JSON GenAI spans.",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    new = actions.add_parser("new", description="one case per logged exchange in FILE")
    new.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        metavar="FILE",
        help="an OpenAI or Anthropic request/response pair (JSON), a JSONL log, or OTLP JSON",
    )
    new.add_argument("--suite", type=Path, default=Path("."), help="the suite folder to write to")
    new.add_argument("--bad", action="store_true", help="the logged answer is the known-bad one")
    new.add_argument("--id", dest="case_id", help="the case id (one exchange only)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        exchanges = read_exchanges(args.source)
    except UnreadableTrace as exc:
        raise UsageError(str(exc)) from None
    if args.case_id and len(exchanges) > 1:
        raise UsageError(f"{args.source} holds {len(exchanges)} exchanges; --id names one case")
    taken = {p.stem for p in args.suite.glob("*.yaml")}
    cases = []
    for number, exchange in enumerate(exchanges, 1):
        case_id = args.case_id or case_id_for(exchange, taken, f"{args.source.stem}-{number}")
        cases.append((exchange.line or number, exchange_case(exchange, case_id, bad=args.bad)))
    written = write_cases(args.suite, cases, load_config(args.suite))
    for path in written.paths:
        print(f"wrote {path}")
    for row, why in written.refused:
        print(f"refused exchange {row}: {why}")
    return ExitCode.USAGE if written.refused else ExitCode.GREEN
