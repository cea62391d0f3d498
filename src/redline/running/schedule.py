"""The order samples are handed out in: the plan's, then sequential batches while a case
stays undecided.

Bookkeeping only, no I/O: `redline run`'s workers, `pytest cases/` and
`bench/sim_sequential.py` all draw through `Schedule`, so the simulation's figures are
the runner's. A sequentially sampled case draws in batches, each handed out whole, and
is decided in sample-index order (see `SequentialDraw`): the samples of a batch after the
one that decided are kept but not counted. Which samples are drawn depends only on their
verdicts, never on the order they finish in or the concurrency, so two runs with frozen
seeds draw the same samples.
"""

from __future__ import annotations

import asyncio
from collections import deque

from redline.running.pipeline import SampleJob
from redline.running.planning import Plan
from redline.vocabulary.verdicts import Verdict


class Schedule:
    """The jobs still to draw, and the most the run may still draw (`most`)."""

    def __init__(self, plan: Plan) -> None:
        self.queue = deque(plan.todo)
        self.sequential = plan.sequential
        self.in_flight = 0
        #: Samples handed out so far plus the most still to come: exact without
        #: sequential cases, else shrinking as they decide.
        self.most = plan.most
        self.changed = asyncio.Event()

    def take(self) -> SampleJob | None:
        """The next job to draw, or None when none is queued now."""
        if not self.queue:
            return None
        self.in_flight += 1
        return self.queue.popleft()

    def done(self, job: SampleJob, verdict: Verdict) -> None:
        """A taken job's sample is stored: count it, and queue the next batch it calls for."""
        self.in_flight -= 1
        seq = self.sequential.get((job.case.suite, job.case.id)) if self.sequential else None
        if seq is not None:
            draw = seq.draw
            undecided = draw.decision() is None
            draw.add(job.index, verdict)
            if undecided and draw.decision() is not None:
                self.most -= draw.plan.max - draw.drawn
            self.queue.extend(seq.more())
        self.changed.set()

    def dropped(self) -> None:
        """A taken job that will not finish (refused by the budget, or interrupted)."""
        self.in_flight -= 1
        self.most -= 1
        self.changed.set()

    async def next(self) -> SampleJob | None:
        """The next job, waiting while samples in flight may still queue more."""
        while True:
            job = self.take()
            if job is not None or self.in_flight == 0:
                return job
            self.changed.clear()
            await self.changed.wait()


__all__ = ["Schedule"]
