"""`redline search` and the engine's run search: substring, any script, index kept current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main
from redline.errors import UsageError
from redline.running.exchange import export_run, import_run
from redline.running.search import search_run
from redline.running.store import RunStore
from runfactory import OK, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run

OUTPUTS = {
    "en": ["Here is the JSON you asked for:\n{}", '{"total": 1}', "Sure! Here is the JSON"],
    "zh": ["我们无法提供退款。", "退款将在三天内到账", "好的"],
    "id": ["Mohon maaf, pengembalian dana tidak bisa.", "Baik", "Terima kasih"],
}


def _store(tmp_path: Path) -> RunStore:
    store = open_store(tmp_path)
    cases = [
        CaseSpec(name, [WRONG, OK, WRONG], outputs=outputs) for name, outputs in OUTPUTS.items()
    ]
    write_run(store, RunSpec("night1", cases))
    later = CaseSpec("en", [OK] * 3, outputs=["Here is the JSON"] * 3)
    write_run(store, RunSpec("night2", [later]))
    return store


def test_finds_a_phrase_in_outputs_of_this_run_only_case_insensitively(tmp_path: Path) -> None:
    store = _store(tmp_path)
    hits = search_run(store, "night1", "here is THE json")
    assert [(h.case_id, h.index) for h in hits] == [("en", 0), ("en", 2)]
    first = hits[0]
    assert first.found_in == "output"
    assert first.snippet[first.start : first.end] == "Here is the JSON"
    assert "\n" not in first.snippet


def test_finds_chinese_words_even_shorter_than_a_trigram(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert [(h.case_id, h.index) for h in search_run(store, "night1", "退款")] == [
        ("zh", 0),
        ("zh", 1),
    ]
    assert [h.index for h in search_run(store, "night1", "无法提供退款")] == [0]
    assert [h.case_id for h in search_run(store, "night1", "pengembalian")] == ["id"]


def test_finds_failure_reasons_and_case_ids(tmp_path: Path) -> None:
    store = _store(tmp_path)
    reasons = search_run(store, "night1", "found 'Here is'")
    assert {h.found_in for h in reasons} == {"reason"}
    assert len(reasons) == 6  # every wrong sample carries that failure reason
    assert {h.case_id for h in search_run(store, "night1", "zh")} == {"zh"}


def test_samples_added_after_a_search_are_found_by_the_next(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert search_run(store, "night1", "lanjutan") == []
    write_run(store, RunSpec("night3", [CaseSpec("id", [OK], outputs=["lanjutan"])]))
    assert [h.case_id for h in search_run(store, "night3", "lanjutan")] == ["id"]
    with pytest.raises(UsageError):
        search_run(store, "night1", "   ")


def test_cli_prints_hits_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    _store(tmp_path).close()
    assert main(["search", "night1", "Here is the JSON"]) == 0
    out = capsys.readouterr().out
    assert "suite-a/en#0" in out and "2 sample(s) in 1 case(s)" in out
    assert main(["search", "night1", "退款", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)  # one document, as `json.load` reads it
    assert document["text"] == "退款"
    lines = document["hits"]
    assert [(d["case_id"], d["sample"], d["verdict"]) for d in lines] == [
        ("zh", 0, "wrong"),
        ("zh", 1, "ok"),
    ]


def test_an_imported_run_is_searched_before_its_index_is_built_as_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An imported run is not indexed (merge defers it): its first search scans the
    samples the index lacks, with the index's answers, whether none, part or all of the
    run is indexed."""
    import redline.running.store as store_module

    monkeypatch.setattr(store_module, "INDEXED_AT_SEARCH", 0)
    store = _store(tmp_path)
    export_run(store, "night1", tmp_path / "export")
    queries = ["here is THE json", "退款", "无法提供退款", "pengembalian", "found 'Here is'", "zh"]
    expected = {q: search_run(store, "night1", q) for q in queries}
    assert all(expected.values())
    with RunStore.open(tmp_path / "imported.db") as imported:
        run = import_run(imported, tmp_path / "export")
        scanned = {q: search_run(imported, run.id, q) for q in queries}
        assert not imported.index_for_search(run.id, most=4)  # a part, as the app does
        partly = {q: search_run(imported, run.id, q) for q in queries}
        assert imported.index_for_search(run.id)
        indexed = {q: search_run(imported, run.id, q) for q in queries}
    assert scanned == partly == indexed == expected
