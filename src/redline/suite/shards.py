"""Deterministic 1/N slices of a suite for CI matrices (`redline run --shard K/N`).

The one assignment rule: a case belongs to the shard of a stable hash of (suite name, the
name of its case file without the suffix). It is known before any case file is parsed, so
a shard reads only its own case files (besides the suite's own files and what its cases
reference); it never depends on the other cases, so adding or retiring a case moves no
other case. A file holds one case, and a file named after its case id (`0042-x.yaml` for
`id: 0042-x`) lands where earlier versions put that id. Renaming a file may move its case.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, TypeVar

from redline.errors import UsageError

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class Shardable(Protocol):
    @property
    def suite(self) -> str: ...

    @property
    def path(self) -> Path: ...


T = TypeVar("T", bound=Shardable)


def shard_of(suite: str, name: str, n: int) -> int:
    """The 1-based shard (1..n) that owns the case file `name` (without its suffix)."""
    if n < 1:
        raise ValueError(f"shard count must be >= 1, got {n}")
    digest = hashlib.sha256(f"{suite}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def owns(shard: tuple[int, int], suite: str, file_name: str) -> bool:
    """Whether shard (k, n) owns the case read from the case file named `file_name` (for
    a symlink: the name of the file it points to) in suite `suite`."""
    k, n = shard
    return shard_of(suite, os.path.splitext(file_name)[0], n) == k


def select(cases: Iterable[T], k: int, n: int) -> list[T]:
    """The cases of shard k of n (1-based), in their original order."""
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"shard {k}/{n}: need 1 <= K <= N")
    return [c for c in cases if owns((k, n), c.suite, c.path.name)]


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` as typed on the command line → (k, n), with a clear error otherwise."""
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"--shard {text!r}: write it as K/N, e.g. 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N (N >= 1)")
    return k, n
