"""Texts encoded on every core at once, each core's share by one engine thread.

An engine that splits every matrix product over a team of threads waits at the end of
each product for the slowest thread of the team; when other processes keep the cores
busy, that thread is often the one not running, and one embedding passes about 170 such
waits. Splitting the texts instead — one share per core, balanced by token count, each
encoded on a team of one — lets every share run to its end on its own: a check waits
once, for its last share. The rows are those of one batch call, bit for bit: the engine
computes each text independently of the others in its batch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

Rows = NDArray[np.float32]
Encode = Callable[[list[str]], Rows]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shares(costs: Sequence[int], count: int) -> list[list[int]]:
    """Indices of `costs` in `count` groups of near-equal total cost, each in input order
    (the costliest first, each to the group with the least so far)."""
    groups: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for index in sorted(range(len(costs)), key=lambda i: -costs[i]):
        lightest = loads.index(min(loads))
        groups[lightest].append(index)
        loads[lightest] += costs[index]
    return [sorted(group) for group in groups if group]


class Spread:
    """Runs an engine's encodes on `cores` threads, each with a team of one.

    `one_thread` makes the calling thread's engine calls single-threaded; the engine keeps
    that setting per thread, so it runs before every encode on the caller's thread and
    once on each pool thread.
    """

    def __init__(self, one_thread: Callable[[], None], cores: int) -> None:
        self._one_thread = one_thread
        self._cores = max(1, cores)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def run(self, texts: Sequence[str], encode: Encode, cost: Callable[[str], int]) -> Rows:
        """Rows for `texts`, in order, as one `encode(texts)` call would give them."""
        count = min(self._cores, len(texts))
        if count <= 1:
            return self._here(encode, list(texts))
        if len(texts) == count:
            groups = [[i] for i in range(count)]
        else:
            groups = shares([cost(t) for t in texts], count)
        texts_of = [[texts[i] for i in group] for group in groups]
        pool = self._workers()
        started = [pool.submit(encode, share) for share in texts_of[1:]]
        parts = [self._here(encode, texts_of[0])]
        parts += [
            self._collect(future, encode, share)
            for future, share in zip(started, texts_of[1:], strict=True)
        ]
        rows = np.empty((len(texts), parts[0].shape[1]), dtype=parts[0].dtype)
        for group, part in zip(groups, parts, strict=True):
            rows[group] = part
        return rows

    def _here(self, encode: Encode, texts: list[str]) -> Rows:
        self._one_thread()
        return encode(texts)

    def _collect(self, future: Future[Rows], encode: Encode, share: list[str]) -> Rows:
        """The share's rows; encoded here instead when no pool thread has started it yet
        (other checks keep the pool busy), rather than waiting in its queue."""
        if future.cancel():
            return self._here(encode, share)
        return future.result()

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._cores - 1,
                    thread_name_prefix="redline-embed",
                    initializer=self._one_thread,
                )
            return self._pool
