"""The `redline` command. Exit codes are a contract: see ExitCode."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from redline.errors import (
    AccountRefused,
    AmbiguousRunId,
    ArtifactExpired,
    ArtifactFailed,
    BaselineMissing,
    BatchApiMissing,
    BatchNotDone,
    BatchPending,
    BatchUnfinished,
    CaseInSeveralSuites,
    CaseNotFound,
    CiError,
    ConfigError,
    CredentialsRejected,
    EndpointUnreachable,
    ExportUnreadable,
    GitCommandError,
    GitError,
    GitUnavailable,
    ModelUnknown,
    NoExport,
    ProblemsError,
    ProxyUnsupported,
    RedlineError,
    RunAlreadyStored,
    RunLocked,
    RunNotFinished,
    RunNotFound,
    RunStopped,
    ShardMissing,
    StoreCorrupt,
    StoreFull,
    StoreMissing,
    UsageError,
)
from redline.version import __version__


class ExitCode(IntEnum):
    GREEN = 0
    RED = 1
    USAGE = 2
    INCONCLUSIVE = 3


Handler = Callable[[argparse.Namespace], int]


def positive(text: str) -> int:
    """An argument that is a whole number of at least 1 (`--samples N`, `--jobs N`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


#: Exit code of a command interrupted with Ctrl-C (128 + SIGINT), as shells expect.
INTERRUPTED = 130

#: The exit code of every error a command can end with: the one place that maps errors
#: to the exit-code contract. Every kind of RedlineError is listed (a new one must be
#: added here: tests check it), and none of them is ever 1, which CI reads as "the
#: prompt regressed". An error not listed takes its nearest listed base's code.
ERROR_EXIT_CODES: dict[type[BaseException], int] = {
    RedlineError: ExitCode.USAGE,
    UsageError: ExitCode.USAGE,
    ConfigError: ExitCode.USAGE,
    ProxyUnsupported: ExitCode.USAGE,
    ProblemsError: ExitCode.USAGE,
    # The key or the account was refused on the first requests: fix it, then run again.
    RunStopped: ExitCode.USAGE,
    CredentialsRejected: ExitCode.USAGE,
    AccountRefused: ExitCode.USAGE,
    ModelUnknown: ExitCode.USAGE,
    EndpointUnreachable: ExitCode.USAGE,
    # A batch still pending (--no-wait) or ended with samples unanswered. `redline run`
    # ends with 3 itself (no verdict yet: inconclusive, never green); any other command
    # that meets one cannot go on: `redline run --resume RUN_ID` collects or resends them.
    BatchApiMissing: ExitCode.USAGE,
    BatchNotDone: ExitCode.USAGE,
    BatchPending: ExitCode.USAGE,
    BatchUnfinished: ExitCode.USAGE,
    StoreMissing: ExitCode.USAGE,
    StoreFull: ExitCode.USAGE,
    StoreCorrupt: ExitCode.USAGE,
    RunLocked: ExitCode.USAGE,
    RunNotFound: ExitCode.USAGE,
    AmbiguousRunId: ExitCode.USAGE,
    RunAlreadyStored: ExitCode.USAGE,
    RunNotFinished: ExitCode.USAGE,
    CaseNotFound: ExitCode.USAGE,
    CaseInSeveralSuites: ExitCode.USAGE,
    BaselineMissing: ExitCode.USAGE,
    NoExport: ExitCode.USAGE,
    ExportUnreadable: ExitCode.USAGE,
    ShardMissing: ExitCode.USAGE,
    GitError: ExitCode.USAGE,
    GitCommandError: ExitCode.USAGE,
    GitUnavailable: ExitCode.USAGE,
    CiError: ExitCode.USAGE,
    ArtifactFailed: ExitCode.USAGE,
    ArtifactExpired: ExitCode.USAGE,
    # The environment failed (disk full, a locked or unreadable store).
    OSError: ExitCode.USAGE,
    sqlite3.Error: ExitCode.USAGE,
    KeyboardInterrupt: INTERRUPTED,
}


def exit_code(error: BaseException) -> int:
    """The exit code `error` ends a command with (its nearest class in ERROR_EXIT_CODES)."""
    for kind in type(error).__mro__:
        if kind in ERROR_EXIT_CODES:
            return ERROR_EXIT_CODES[kind]
    raise error


@dataclass(frozen=True)
class _Command:
    module: str
    summary: str


#: Every subcommand: the module under redline.cli that registers it and its line in
#: `redline --help`. A module is imported only when its command runs (start-up stays
#: fast), and defines `register(subparsers)`, which adds the parser (without `help=`,
#: the summary is here) and sets `handler` via set_defaults.
COMMANDS: dict[str, _Command] = {
    "validate": _Command("validate", "check suites and cases without calling a model"),
    "run": _Command("run", "run suites N samples per case and judge the rates"),
    "runs": _Command("runs", "list stored runs, newest first"),
    "cancel": _Command("cancel", "cancel the provider batches a run is waiting for"),
    "show": _Command("show", "print a stored run, or one case's raw samples"),
    "search": _Command("search", "find text in a run's raw outputs, failure reasons and case ids"),
    "export": _Command("export", "write a run as results.json + samples.jsonl"),
    "import": _Command(
        "export", "load exported runs (CI artifacts: folders or zips) into the local store"
    ),
    "pull": _Command("pull", "import last nights' runs from CI artifacts (GitHub Actions)"),
    "baseline": _Command("baseline", "save a run as the baseline, or compare with it"),
    "history": _Command("history", "a case's pass counts across stored runs"),
    "compare": _Command("compare", "compare two runs case by case (A → B)"),
    "report": _Command("report", "write JUnit XML, an HTML report or a markdown summary"),
    "init": _Command("init", "scaffold a starter suite and a GitHub Actions workflow"),
    "merge": _Command("merge", "merge the exports of a sharded run into one run"),
    "guard": _Command("guard", "refuse a loosened threshold in the same commit as a prompt change"),
    "triage": _Command("triage", "walk a red run case by case: rerun, outputs, history"),
    "rerun": _Command(
        "rerun", "find why a case is red: your prompt change, the model, the case, or noise"
    ),
    "label": _Command(
        "label", "label a run's outputs pass/fail against a rubric, blind to the judge"
    ),
    "calibrate": _Command("calibrate", "measure a rubric judge against the labels (Cohen's kappa)"),
    "case": _Command("case_new", "write a case from a logged exchange (case new --from FILE)"),
    "cases": _Command("cases_import", "write cases from a CSV or JSONL table (cases import)"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class _LazyCommands(_SubParsers):
    """Subcommands listed from COMMANDS, each one's module imported when it is chosen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()
        self._loading = False
        for name, command in COMMANDS.items():
            super().add_parser(name, help=command.summary, add_help=False)

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """A module's real parser, taking the place of the listed one."""
        if name not in COMMANDS or not self._loading:
            raise ValueError(f"subcommand {name!r} is not listed in redline.cli.COMMANDS")
        kwargs.setdefault("prog", f"{self._prog_prefix} {name}")
        parser = self._parser_class(**kwargs)
        self._name_parser_map[name] = parser
        return parser

    def load(self, name: str) -> argparse.ArgumentParser:
        """The full parser of subcommand `name` (importing its module once)."""
        module = COMMANDS[name].module
        if module not in self._loaded:
            self._loaded.add(module)
            self._loading = True
            try:
                importlib.import_module(f"redline.cli.{module}").register(self)
            finally:
                self._loading = False
        return self._name_parser_map[name]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, Sequence) and values and values[0] in COMMANDS:
            self.load(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, every_command: bool = False) -> argparse.ArgumentParser:
    """The `redline` parser; a subcommand's own options load when it is parsed, or all of
    them now with `every_command` (for tools that walk the whole tree: tests, docs)."""
    parser = _Parser(
        prog="redline",
        description="Prompt-regression testing: rates, evidence, triage.",
    )
    parser.add_argument("--version", action="version", version=f"redline {__version__}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, action=_LazyCommands
    )
    if every_command:
        assert isinstance(commands, _LazyCommands)
        for name in COMMANDS:
            commands.load(name)
    return parser


def console() -> int:
    """The `redline` executable: `main`, then an exit without a long shutdown."""
    try:
        return main()
    finally:
        # Everything is written and closed by now; without this, the cyclic collections
        # of interpreter shutdown walk every object of the run (0.4-1 s after a run).
        gc.freeze()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return ExitCode.USAGE
    return run_command(handler, args)


def run_command(handler: Handler, args: argparse.Namespace) -> int:
    """A command's exit code; an error it ends with is said on stderr and mapped by
    ERROR_EXIT_CODES."""
    try:
        return int(handler(args))
    except BrokenPipeError:
        return _reader_went_away()
    except (RedlineError, OSError, sqlite3.Error, KeyboardInterrupt) as exc:
        print(_error_text(exc), file=sys.stderr)
        return exit_code(exc)


def _error_text(error: BaseException) -> str:
    """What stderr says about an error a command ended with."""
    if isinstance(error, ProblemsError):
        listed = "".join(f"\n  {problem}" for problem in error.problems)
        return f"redline: {len(error.problems)} problem(s) found:{listed}"
    if isinstance(error, RedlineError):
        return f"redline: error: {error}"
    if isinstance(error, KeyboardInterrupt):
        return "redline: interrupted"
    return f"redline: error: {type(error).__name__}: {error}"


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
    sys.exit(console())
