"""The `redline` command. Exit codes are a contract: see ExitCode."""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from enum import IntEnum

from redline import __version__
from redline.errors import ProblemsError, RedlineError


class ExitCode(IntEnum):
    GREEN = 0
    RED = 1
    USAGE = 2
    INCONCLUSIVE = 3


Handler = Callable[[argparse.Namespace], int]

#: Each module defines `register(subparsers) -> None`, setting `handler` via set_defaults.
_COMMAND_MODULES = (
    "validate",
    "run",
    "runs",
    "show",
    "search",
    "export",
    "baseline",
    "history",
    "compare",
    "report",
    "init",
    "merge",
    "guard",
    "triage",
    "rerun",
    "label",
    "calibrate",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or just command `only` (its module alone is imported: the
    pre-commit hook's `redline guard` should not load the runner and the providers)."""
    parser = _Parser(
        prog="redline",
        description="Prompt-regression testing: rates, evidence, triage.",
    )
    parser.add_argument("--version", action="version", version=f"redline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only in _COMMAND_MODULES else _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"redline.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"redline.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(handler(args))
    except BrokenPipeError:
        return _reader_went_away()
    except ProblemsError as exc:
        print(f"redline: {len(exc.problems)} problem(s) found:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return ExitCode.USAGE
    except RedlineError as exc:
        print(f"redline: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except (OSError, sqlite3.Error) as exc:
        # The environment failed (disk full, a locked or unreadable store): never exit 1,
        # which CI reads as "the prompt regressed".
        print(f"redline: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("redline: interrupted", file=sys.stderr)
        return 130


def _reader_went_away() -> int:
    """`redline show … | head`: the reader closed the pipe; that is the user's choice.

    Later writes (and the interpreter's final flush) would fail again, so stdout is
    pointed at /dev/null; exit 0 with nothing on stderr.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return ExitCode.GREEN


if __name__ == "__main__":
    sys.exit(main())
