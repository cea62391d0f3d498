"""Errors a user can act on: every one says where and how to fix it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in one input file, with its position and a fix hint."""

    path: str
    line: int
    column: int
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        text = f"{where}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text


class RedlineError(Exception):
    """Base of every error redline raises on purpose; the CLI maps it to exit code 2."""


class ConfigError(RedlineError):
    """The configuration (pyproject.toml / redline.toml) is wrong or incomplete."""


class UsageError(RedlineError):
    """The command line asks for something that cannot be done."""


class CredentialsRejected(RedlineError):
    """The provider refused the API key on the first requests: the run stopped early."""


class ProblemsError(RedlineError):
    """Several problems found at once, all reported together before anything runs."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def relpath(path: Path, root: Path | None = None) -> str:
    """A path as the user would type it: relative to root (default cwd) when possible."""
    base = root if root is not None else Path.cwd()
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
