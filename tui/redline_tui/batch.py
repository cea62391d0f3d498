"""Cause analyses for many cases at once: a bounded queue over the app's background jobs.

A red night has dozens of failing cases. Queuing Step 1 for all of a group with one key,
and reading "7 prompt, 2 case, 3 noise" at the end, is the morning's first hour saved.
The analyses running at once share the run's concurrency between them, so the provider
sees no more requests in flight than the nightly itself sent.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from redline.config import Config
from redline.deciding.case_rows import TRIAGE_WORDS
from redline.deciding.cause import ArmKind, Settings
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import CaseRecord, RunRecord
from redline_tui.cause_jobs import CauseJobs, case_key
from redline_tui.messages import CaseKey, CauseProgressed

#: Requests in flight per analysis: below this share, fewer analyses run side by side.
MIN_SHARE = 4


def batch_width(concurrency: int) -> int:
    """How many analyses run at once: each keeps at least MIN_SHARE requests in flight."""
    return max(1, concurrency // MIN_SHARE)


def arm_concurrency(concurrency: int, width: int) -> int:
    """Requests in flight per arm, so all arms of all running analyses stay within the run's
    concurrency (an analysis draws its arms side by side)."""
    return max(1, concurrency // (width * len(ArmKind)))


@dataclass
class CauseBatch:
    """One queue of analyses; `advance` is called for every message the jobs send."""

    jobs: CauseJobs
    config: Config
    run: RunRecord
    width: int
    settings: Settings = field(default_factory=Settings)
    pending: deque[CaseRecord] = field(default_factory=deque)
    active: set[CaseKey] = field(default_factory=set)
    conclusions: Counter[str] = field(default_factory=Counter)
    total: int = 0
    cancelled: bool = False

    @classmethod
    def start(
        cls, jobs: CauseJobs, config: Config, run: RunRecord, cases: Sequence[CaseRecord]
    ) -> CauseBatch:
        width = batch_width(config.concurrency)
        shared = replace(config, concurrency=arm_concurrency(config.concurrency, width))
        batch = cls(jobs, shared, run, width, pending=deque(cases), total=len(cases))
        batch._fill()
        return batch

    @property
    def finished(self) -> bool:
        return not self.pending and not self.active

    def advance(self, message: CauseProgressed) -> bool:
        """Count a finished analysis and start the next; True when it was one of ours."""
        if message.key not in self.active or not message.finished:
            return False
        self.active.discard(message.key)
        if message.diagnosis is not None:
            diagnosis = message.diagnosis
            stopped = diagnosis.stopped and diagnosis.cause is Cause.UNDECIDED
            self.conclusions["stopped" if stopped else diagnosis.cause.value] += 1
        else:
            self.conclusions["failed"] += 1
        self._fill()
        return True

    def cancel(self) -> None:
        """Nothing more starts; running analyses stop and keep their finished samples."""
        self.cancelled = True
        self.pending.clear()
        for key in self.active:
            self.jobs.cancel(key)

    def summary(self) -> str:
        """`7 prompt, 2 case, 3 noise`: the conclusions, most frequent first, in the words
        of the Triage column (`changed`, not `case-changed`)."""
        parts = [
            f"{n} {TRIAGE_WORDS.get(name, name)}" for name, n in self.conclusions.most_common()
        ]
        return ", ".join(parts) or "no conclusion"

    def status(self) -> str:
        done = sum(self.conclusions.values())
        if self.finished:
            head = "stopped" if self.cancelled else "done"
            return f"Batch {head}: {done} of {self.total} analysed — {self.summary()}"
        return (
            f"Batch: {done} of {self.total} analysed, {len(self.active)} running, "
            f"{len(self.pending)} queued (x stops it) — {self.summary()}"
        )

    def _fill(self) -> None:
        while self.pending and len(self.active) < self.width:
            case = self.pending.popleft()
            key = case_key(self.run, case)
            if self.jobs.running(key):
                # Started by hand in Step 1 already: it lands in the column all the same.
                self.total -= 1
                continue
            if self.jobs.start(self.config, self.run, case, self.settings):
                self.active.add(key)


__all__ = ["MIN_SHARE", "CauseBatch", "arm_concurrency", "batch_width"]
