"""How every command prints: one console, one table shape, one JSON form.

Without a terminal (a CI log, a pipe, a file) the console has no width limit, so a
table is as wide as its content and no case id, run id or number is ever cut; on a
terminal (or with COLUMNS set), cells fold onto the next line instead of ending in an
ellipsis.
`--format json` prints the same facts as one JSON document, for scripts that must
never parse a table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from redline.presentation import VERDICT_STYLES
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

#: Width of a console that is not a terminal: wider than any table redline prints.
_UNBOUNDED = 100_000


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader closed the pipe (`| head`): let `redline.cli.main` end quietly, exit 0.

        rich's own handling exits 1, which a script would read as a regression.
        """
        self.quiet = True
        raise BrokenPipeError


def make_console(*, stderr: bool = False) -> Console:
    """A console that never interprets emoji codes or highlights, nor cuts a table.

    Without a terminal the width is unbounded, unless COLUMNS asks for one: then cells
    wrap at that width (they are never cut either way).
    """
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else _requested_width() or _UNBOUNDED
    return _Console(highlight=False, emoji=False, width=width, stderr=stderr)


def _requested_width() -> int | None:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return columns if columns > 0 else None


def make_table(
    columns: Sequence[str],
    *,
    title: str | None = None,
    right: Sequence[str] = (),
    whole: Sequence[str] = (),
    show_edge: bool = True,
) -> Table:
    """A table whose cells wrap rather than being cut when a terminal is too narrow.

    `right`: right-aligned (number) columns; `whole`: columns other columns give way to
    (the ids a reader copies into the next command), wrapped only as a last resort.
    """
    table = Table(title=title, title_justify="left", show_edge=show_edge, expand=False)
    for name in columns:
        table.add_column(
            name,
            overflow="fold",
            no_wrap=name in whole,
            justify="right" if name in right else "left",
        )
    return table


def add_format_option(
    parser: argparse.ArgumentParser, extra: Sequence[str] = (), more_help: str = ""
) -> None:
    parser.add_argument(
        "--format",
        choices=("table", "json", *extra),
        default="table",
        help="table (default) for people; json for scripts: one JSON document on stdout, "
        "the same facts as the table, never cut" + more_help,
    )


def print_json(data: Any) -> None:
    """One JSON document on stdout (UTF-8, keys in a stable order)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def verdict_breakdown(verdicts: Mapping[Verdict, int]) -> Text:
    """`ok 4 wrong 1 …` with only the non-zero verdicts, coloured."""
    text = Text()
    for v in VERDICT_ORDER:
        n = verdicts.get(v, 0)
        if n:
            if text:
                text.append(" ")
            text.append(f"{v} {n}", style=VERDICT_STYLES[v])
    return text
