"""Full-screen commands need a terminal: without one they stop at once, with exit code 2."""

from __future__ import annotations

import sys

from redline.errors import UsageError


def require_terminal(command: str, instead: str) -> None:
    """Raise a usage error unless stdin and stdout are both a terminal.

    A full-screen app drawn into a pipe never returns and fills the pipe with escape codes.
    """
    if sys.stdin.isatty() and sys.stdout.isatty():
        return
    raise UsageError(
        f"`redline {command}` is a full-screen app and needs a terminal (stdin and stdout "
        f"must both be one). Run it in a terminal, or without one: {instead}"
    )
