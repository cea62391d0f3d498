"""A run's samples enter the search index while it runs: every sample is found once, whether
searched during the run (from another process), after it, or after a killed part resumed."""

from __future__ import annotations

from pathlib import Path

from redline.running.search import search_run
from redline.running.store import RunStore
from redline.vocabulary.records import RunStatus, SampleRecord
from redline.vocabulary.verdicts import Verdict
from runfactory import RunSpec, open_store, write_run


def _sample(run_id: str, index: int) -> SampleRecord:
    return SampleRecord(
        run_id=run_id,
        suite="s",
        case_id="c",
        index=index,
        output=f"the answer holds marker{index:04d} and more",
        verdict=Verdict.OK,
        finish_reason=None,
    )


def _running(store: RunStore, run_id: str) -> None:
    write_run(store, RunSpec(run_id, [], status=RunStatus.RUNNING))
    store.claim_run(run_id)


def _found(store: RunStore, run_id: str, text: str) -> list[int]:
    return [h.index for h in search_run(store, run_id, text, limit=5000)]


def test_every_sample_is_found_once_during_and_after_the_run(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    _running(store, "night")
    _running(store, "other")
    index = 0
    for size in [1, 3, 40, 200, 1, 64, 300, 7]:  # batches crossing the indexing steps
        store.add_samples(_sample("night", index + i) for i in range(size))
        store.add_samples([_sample("other", index)])  # another run's rows in between
        index += size
        if index == 44:  # a search from another process while the run goes on
            with RunStore.open(store.path) as reader:
                assert _found(reader, "night", "marker0043") == [43]
                assert len(_found(reader, "night", "the answer holds")) == 44
    with RunStore.open(store.path) as reader:
        assert len(_found(reader, "night", "the answer holds")) == index
    store.finish_run("night", RunStatus.FINISHED, None, "2026-12-02T00:00:00.000+00:00")
    found = _found(store, "night", "the answer holds")
    assert sorted(found) == list(range(index))
    assert _found(store, "night", f"marker{index - 1:04d}") == [index - 1]
    assert len(_found(store, "other", "the answer holds")) == 8


def test_a_resumed_run_finds_what_a_killed_process_left_unindexed(tmp_path: Path) -> None:
    killed = open_store(tmp_path)
    _running(killed, "night")
    killed.add_samples(_sample("night", i) for i in range(300))
    killed.close()  # killed: the run was never closed, part of it never indexed
    resumed = RunStore.open(killed.path)
    resumed.claim_run("night")
    resumed.add_samples(_sample("night", i) for i in range(300, 310))
    resumed.finish_run("night", RunStatus.FINISHED, None, "2026-12-02T00:00:00.000+00:00")
    assert sorted(_found(resumed, "night", "the answer holds")) == list(range(310))
