"""Which copy of the local model runs a sample, and when, so prompts are computed once.

A 135M model on a CPU is compute-bound: reading a prompt token costs about as much
as generating one, and the Quickstart's prompts are half of all its tokens (each
case's prompt is sent once per sample). llama.cpp keeps each slot's last prompt in
its context and reuses the common prefix when the next request lands on that slot,
so the samples of one case should follow each other on one slot instead of reading
the same prompt side by side on several.

So a model copy is handed at most as many samples as it has slots, and a free slot
takes, in this order: the next sample of the prompt it has just finished (cached);
the oldest sample whose prompt is not being decoded anywhere, preferably one that
shares the finished prompt's system prompt (its start is cached too), else one that
last ran on this copy; and, only when the copy is otherwise idle or every copy is
busy, any sample (at the end of a run, reading a prompt again beats an idle slot).
A sample several copies could take goes to the one that has its prompt cached, else
to the least busy (two samples on two copies decode faster than on one). One copy per
core, each on one thread: a single-threaded llama.cpp never waits on other threads
between the hundreds of small operations of a decoding step.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Copy:
    """One model instance and the prompts of the samples running on its slots."""

    def __init__(self, server: Any, slots: int) -> None:
        self.server = server
        self.slots = slots
        self.running: dict[str, int] = {}
        #: The prompt of the sample that last left a slot (its context holds it), and
        #: that prompt's family (its system prompt: the start of the context).
        self.freed: str | None = None
        self.freed_family: str | None = None

    @property
    def busy(self) -> int:
        return sum(self.running.values())


class Copies:
    """Hands samples to model copies (see the module docstring); thread-safe."""

    def __init__(self, servers: list[Any], slots_each: int) -> None:
        self.copies = [Copy(server, slots_each) for server in servers]
        self._waiting: list[tuple[int, str, str]] = []
        self._tickets = itertools.count()
        self._last_seen: dict[str, Copy] = {}
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, key: str, family: str = "") -> Iterator[Any]:
        """Wait for a slot for a sample whose prompt is `key` (and system prompt `family`);
        yields the server to call."""
        with self._changed:
            entry = (next(self._tickets), key, family)
            self._waiting.append(entry)
            chosen: list[Copy] = []

            def picked() -> bool:
                chosen[:] = [c for c in self.copies if self._pick(c) == entry]
                return bool(chosen)

            self._changed.wait_for(picked)
            copy = max(chosen, key=lambda c: self._fit(c, key))
            self._waiting.remove(entry)
            if copy.freed == key:
                copy.freed = None
            copy.running[key] = copy.running.get(key, 0) + 1
            if len(self._last_seen) > 10_000:
                self._last_seen.clear()
            self._last_seen[key] = copy
            self._changed.notify_all()
        try:
            yield copy.server
        finally:
            with self._changed:
                left = copy.running[key] - 1
                if left:
                    copy.running[key] = left
                else:
                    del copy.running[key]
                copy.freed = key
                copy.freed_family = family
                self._changed.notify_all()

    @property
    def in_hand(self) -> int:
        """Samples waiting or running."""
        with self._changed:
            return len(self._waiting) + sum(c.busy for c in self.copies)

    def _pick(self, copy: Copy) -> tuple[int, str, str] | None:
        """The waiting sample `copy`'s next free slot takes, if any."""
        if copy.busy >= copy.slots or not self._waiting:
            return None
        for entry in self._waiting:
            if entry[1] == copy.freed:
                return entry
        running = {key for c in self.copies for key in c.running}
        fresh = [entry for entry in self._waiting if entry[1] not in running]
        if copy.freed_family:
            for entry in fresh:
                if entry[2] == copy.freed_family:
                    return entry
        for entry in fresh:
            if self._last_seen.get(entry[1], copy) is copy:
                return entry
        if fresh:
            return fresh[0]
        if copy.busy == 0 or all(c.busy for c in self.copies):
            return self._waiting[0]
        return None

    def _fit(self, copy: Copy, key: str) -> tuple[bool, bool, int]:
        """How well `copy` suits a sample of `key`: its prompt cached there, last run
        there, then the fewer samples already running on it."""
        return (copy.freed == key, self._last_seen.get(key) is copy, -copy.busy)
