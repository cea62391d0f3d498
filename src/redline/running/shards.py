"""Deterministic 1/N slices of a suite for CI matrices (`redline run --shard K/N`).

A shard runs the cases whose stable hash of (suite, case id) falls in it: a case's shard
never depends on the other cases, so adding or retiring a case moves no other case.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Protocol, TypeVar

from redline.errors import UsageError

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class Shardable(Protocol):
    @property
    def suite(self) -> str: ...

    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=Shardable)


def shard_of(suite: str, case_id: str, n: int) -> int:
    """The 1-based shard (1..n) that owns this case."""
    if n < 1:
        raise ValueError(f"shard count must be >= 1, got {n}")
    digest = hashlib.sha256(f"{suite}\x00{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def select(cases: Iterable[T], k: int, n: int) -> list[T]:
    """The cases of shard k of n (1-based), in their original order."""
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"shard {k}/{n}: need 1 <= K <= N")
    return [c for c in cases if shard_of(c.suite, c.id, n) == k]


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` as typed on the command line → (k, n), with a clear error otherwise."""
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"--shard {text!r}: write it as K/N, e.g. 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N (N >= 1)")
    return k, n
