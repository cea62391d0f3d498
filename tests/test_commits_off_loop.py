"""Finished samples committed on a thread: a run stopped while a batch is being written
waits for that commit, then counts the batch; nothing finished is lost or counted unstored."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from redline.running.execution import OFF_LOOP_BATCH, Commits, Tally
from redline.running.options import RunOptions
from redline.running.planning import plan_run
from redline.running.schedule import Schedule
from redline.suite.cases import load_suite
from redline.vocabulary.records import SampleRecord
from redline.vocabulary.verdicts import Verdict


class _SlowStore:
    """A sink whose commit holds until the test lets it go (a slow disk)."""

    def __init__(self) -> None:
        self.stored: list[SampleRecord] = []
        self.writing = threading.Event()
        self.go_on = threading.Event()
        self.threads: set[str] = set()

    def add_samples(self, samples: Iterable[SampleRecord]) -> None:
        batch = list(samples)
        self.threads.add(threading.current_thread().name)
        self.writing.set()
        assert self.go_on.wait(10)
        self.stored.extend(batch)


def _suite(root: Path) -> Path:
    folder = root / "s"
    folder.mkdir()
    (folder / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: s\nprompt:\n  system: system.txt\n  user: '{{q}}'\nmodel: fake\n"
        f"tier: quality\nsamples: {OFF_LOOP_BATCH * 2}\n",
        encoding="utf-8",
    )
    (folder / "c.yaml").write_text(
        "id: c\nprovenance: {ticket: T-1, reported: 2026-01-02, note: t}\n"
        "vars:\n  q: hello\nassert:\n  - type: is-json\n",
        encoding="utf-8",
    )
    return folder


def test_a_batch_being_committed_when_the_run_stops_is_kept_and_counted(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))
    jobs = Schedule(plan_run([(suite, suite.cases[0])], RunOptions(), "r1"))
    tally = Tally("r1", jobs, None, 0.0)
    store = _SlowStore()
    commits = Commits(store, tally, None, off_loop=True)

    async def stop_while_writing() -> None:
        commits.workers = 1
        writer = asyncio.ensure_future(commits.write())
        for _ in range(OFF_LOOP_BATCH):
            job = jobs.take()
            assert job is not None
            sample = SampleRecord("r1", "s", "c", job.index, "{}", Verdict.OK, None)
            commits.add(job, sample, 0.0)
        assert await asyncio.to_thread(store.writing.wait, 10)
        assert tally.done == 0  # not counted before its commit returned
        writer.cancel()
        await asyncio.sleep(0.1)
        assert not writer.done()  # the stop waits for the commit under way
        store.go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await writer

    asyncio.run(stop_while_writing())
    assert [s.index for s in store.stored] == list(range(OFF_LOOP_BATCH))
    assert tally.done == OFF_LOOP_BATCH
    assert threading.main_thread().name not in store.threads
