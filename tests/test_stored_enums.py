"""Tiers and triage states are enums in code and the same words on disk as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from redline.casemodel import TIERS
from redline.running.exchange import case_json, record_from_json
from redline.vocabulary.causes import Cause, TriageState
from redline.vocabulary.records import CaseRecord, TriageRecord
from redline.vocabulary.tiers import Tier
from runfactory import CaseSpec, RunSpec, open_store, write_run

#: Every word a triage state was ever stored as; a store written before the enum holds them.
STORED_WORDS = (
    *(cause.value for cause in Cause),
    "running",
    "stopped",
    "retired",
    "accepted",
    "quarantined",
)


def test_every_cause_found_is_a_triage_state_of_the_same_word() -> None:
    assert [TriageState.found(cause).value for cause in Cause] == [c.value for c in Cause]
    assert sorted(s.value for s in TriageState) == sorted(STORED_WORDS)


@pytest.mark.parametrize("word", STORED_WORDS)
def test_a_triage_state_is_stored_as_its_word_and_read_back_as_the_enum(
    tmp_path: Path, word: str
) -> None:
    store = open_store(tmp_path)
    write_run(store, RunSpec("r1", [CaseSpec("c1", [])]))
    store.put_triage(TriageRecord("r1", "suite-a", "c1", TriageState(word), 0.5))

    read = store.triage("r1")[("suite-a", "c1")]
    store.close()
    with sqlite3.connect(tmp_path / ".redline" / "redline.db") as db:
        (on_disk,) = db.execute("SELECT state FROM triage").fetchone()

    assert read.state is TriageState(word)
    assert on_disk == word


def test_a_state_written_as_a_plain_word_by_an_older_redline_reads_back(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    write_run(store, RunSpec("r1", [CaseSpec("c1", [])]))
    store.put_triage(TriageRecord("r1", "suite-a", "c1", "case-changed", 1.0))  # type: ignore[arg-type]

    assert store.triage("r1")[("suite-a", "c1")].state is TriageState.CASE_CHANGED


@pytest.mark.parametrize("tier", TIERS)
def test_a_case_tier_is_stored_and_exported_as_its_word(tmp_path: Path, tier: str) -> None:
    store = open_store(tmp_path)
    write_run(store, RunSpec("r1", [CaseSpec("c1", [], tier=tier)]))

    (case,) = store.cases("r1")
    store.close()
    with sqlite3.connect(tmp_path / ".redline" / "redline.db") as db:
        (on_disk,) = db.execute("SELECT tier FROM cases").fetchone()
    exported = json.loads(json.dumps(case_json(case)))

    assert case.tier is Tier(tier)
    assert on_disk == tier
    assert exported["tier"] == tier
    assert record_from_json(CaseRecord, exported, run_id="r1").tier is Tier(tier)
