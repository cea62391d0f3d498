"""Shards read only their share: `--shard K/N` picks case files by name before parsing them,
a full `validate` still checks every file, the merge refuses shards that read different
inputs, and validate's parse cache reads again what changed."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import load_config
from redline.errors import ProblemsError
from redline.running.manifest import case_hash, sample_configuration
from redline.suite import cases as cases_module
from redline.suite import parsecache
from redline.suite.cases import Case, check_suites, load_suites
from redline.suite.parsecache import CACHE_FILE, ParseCache
from redline.suite.shards import shard_of
from servers import LoopbackLLMServer

SUITE = "share"


def _case_text(case_id: str, *, fixture: bool = False) -> str:
    policy = "\n  policy: file://fixtures/policy.txt" if fixture else ""
    return (
        f"id: {case_id}\nprovenance: {{ticket: T-1, reported: 2026-01-02, note: test}}\n"
        f"vars:\n  q: 'MODE:json {case_id}'{policy}\n"
        "assert:\n  - type: is-json\n  - type: max-chars\n    value: 400\n"
    )


def _suite(root: Path, cases: int = 40) -> Path:
    """A suite whose case files are not all named after their ids (`n07.yaml` holds `case-7`)."""
    folder = root / "cases" / SUITE
    (folder / "fixtures").mkdir(parents=True)
    (folder / "system.txt").write_text("Answer as JSON.\n", encoding="utf-8")
    (folder / "fixtures" / "policy.txt").write_text("Refunds in 30 days.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        f"name: {SUITE}\nprompt:\n  system: system.txt\n  user: '{{{{q}}}}'\n"
        "model: fake\nsamples: 2\ntier: contract\n",
        encoding="utf-8",
    )
    for n in range(cases):
        (folder / f"n{n:02d}.yaml").write_text(
            _case_text(f"case-{n}", fixture=n % 3 == 0), encoding="utf-8"
        )
    return folder


def _project(root: Path, server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REDLINE_LOOPBACK_KEY", "sk-test")
    monkeypatch.chdir(root)
    (root / "redline.toml").write_text(server.redline_toml(), encoding="utf-8")
    return _suite(root)


def _file_in_shard(k: int, n: int, stem: str = "broken") -> str:
    """A case file name that shard k of n owns."""
    return next(f"{stem}{i}.yaml" for i in range(1000) if shard_of(SUITE, f"{stem}{i}", n) == k)


def _reading(suite_cases: list[Case]) -> dict[str, tuple[object, ...]]:
    """What a run takes from each case: its fields, its hash and its sample configuration."""
    [suite] = load_suites([Path("cases")])
    return {
        c.id: (
            c.path,
            dict(c.vars),
            c.tier,
            c.samples,
            c.required,
            c.files,
            [type(a).__name__ for a in c.assertions],
            case_hash(c),
            sample_configuration(suite, c, "m"),
        )
        for c in suite_cases
    }


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_of_a_loaded_suite_cover_every_case_once_as_a_full_load_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    [full] = load_suites([Path("cases")])
    shares = [load_suites([Path("cases")], shard=(k, n))[0].cases for k in range(1, n + 1)]
    ids = [c.id for share in shares for c in share]
    assert sorted(ids) == sorted(c.id for c in full.cases) and len(ids) == len(set(ids))
    merged: dict[str, tuple[object, ...]] = {}
    for share in shares:
        merged |= _reading(list(share))
    assert merged == _reading(list(full.cases))


def test_adding_a_case_file_moves_no_other_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)

    def shares() -> list[set[str]]:
        return [
            {c.id for c in load_suites([Path("cases")], shard=(k, 4))[0].cases}
            for k in (1, 2, 3, 4)
        ]

    before = shares()
    (folder / "n99-new.yaml").write_text(_case_text("case-new"), encoding="utf-8")
    after = shares()
    for old, new in zip(before, after, strict=True):
        assert old <= new and new - old <= {"case-new"}
    assert sum(len(s) for s in after) == 41


def test_a_bad_file_in_another_shard_fails_only_that_shard_and_the_full_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "redline.toml").write_text('[models]\nfake = "openai:gpt-x-2025-01-01"\n')
    bad = _file_in_shard(2, 2)
    (folder / bad).write_text("id: broken\nassert:\n  - type: contains\n    value: [1\n")
    assert main(["validate", "--shard", "1/2"]) == 0
    assert "of shard 1/2" in capsys.readouterr().out
    assert main(["validate", "--shard", "2/2"]) == 2
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert f"cases/{SUITE}/{bad}:4:" in err
    with pytest.raises(ProblemsError):
        load_suites([Path("cases")], load_config(), shard=(2, 2))


def test_a_case_id_used_in_two_shards_is_found_by_the_full_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _suite(tmp_path, cases=0)
    monkeypatch.chdir(tmp_path)
    first, second = _file_in_shard(1, 2, "a"), _file_in_shard(2, 2, "b")
    for name in (first, second):
        (folder / name).write_text(_case_text("same-id"), encoding="utf-8")
    assert [len(load_suites([Path("cases")], shard=(k, 2))[0].cases) for k in (1, 2)] == [1, 1]
    assert main(["validate"]) == 2
    assert "case id 'same-id' is also used by" in capsys.readouterr().err


def test_a_shard_run_reads_and_hashes_only_its_share(
    tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _project(tmp_path, llm_server, monkeypatch)
    (folder / _file_in_shard(2, 2)).write_text("id: [unclosed\n", encoding="utf-8")
    assert main(["run", "--quiet", "--shard", "1/2", "--out", "s1"]) in (0, 1)
    results = json.loads((tmp_path / "s1/results.json").read_text(encoding="utf-8"))
    own = {f"{SUITE}/{c.path.name}" for c in load_suites([Path("cases")], shard=(1, 2))[0].cases}
    assert {c["id"] for c in results["cases"]} == {
        c.id for c in load_suites([Path("cases")], shard=(1, 2))[0].cases
    }
    case_files = {k for k in results["manifest"] if k.endswith(".yaml") and "/n" in k}
    assert case_files == own
    assert f"{SUITE}/suite.yaml" in results["manifest"]
    assert f"{SUITE}/system.txt" in results["manifest"]


def test_merge_refuses_shards_that_read_a_shared_input_with_different_content(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _project(tmp_path, llm_server, monkeypatch)
    assert main(["run", "--quiet", "--shard", "1/2", "--out", "s1"]) in (0, 1)
    (folder / "fixtures" / "policy.txt").write_text("Refunds in 14 days.\n", encoding="utf-8")
    assert main(["run", "--quiet", "--shard", "2/2", "--out", "s2"]) in (0, 1)
    capsys.readouterr()
    assert main(["merge", "s1", "s2", "--out", "merged"]) == 2
    err = capsys.readouterr().err
    assert f"manifest entry {SUITE}/fixtures/policy.txt differs" in err
    assert "shard 2/2 (s2) and shard 1/2 (s1)" in err
    assert not (tmp_path / "merged").exists()


def _check(cache: ParseCache) -> list[tuple[object, ...]]:
    checked = check_suites([Path("cases")], None, cache)
    return [(c.suite.name, c.cases) for c in checked]


def test_the_parse_cache_reads_again_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".redline" / CACHE_FILE
    uncached = _check(ParseCache(None))

    cold = ParseCache(path)
    assert _check(cold) == uncached and (cold.hits, cold.misses) == (0, 40)
    warm = ParseCache(path)
    assert _check(warm) == uncached and (warm.hits, warm.misses) == (40, 0)

    # An edited case file is read again, and a problem in it reported at its line.
    (folder / "n05.yaml").write_text(_case_text("case-5") + "  - type: max-chars\n    value: -1\n")
    edited = ParseCache(path)
    with pytest.raises(ProblemsError) as err:
        _check(edited)
    assert f"cases/{SUITE}/n05.yaml:10:12" in str(err.value) and edited.misses == 1
    (folder / "n05.yaml").write_text(_case_text("case-5", fixture=True), encoding="utf-8")
    again = ParseCache(path)
    assert _check(again) == uncached and again.misses == 1

    # A fixture the cases read: each case reading it is read again.
    (folder / "fixtures" / "policy.txt").write_text("Refunds in 14 days.\n", encoding="utf-8")
    fixture = ParseCache(path)
    _check(fixture)
    assert fixture.misses == 15  # n00, n03, …, n39 and the edited n05

    # The suite's own files are part of every key.
    (folder / "system.txt").write_text("Answer as strict JSON.\n", encoding="utf-8")
    suite_changed = ParseCache(path)
    _check(suite_changed)
    assert suite_changed.misses == 40

    # Another redline version starts from an empty cache.
    monkeypatch.setattr(parsecache, "__version__", "0.0.0-other")
    other = ParseCache(path)
    _check(other)
    assert (other.hits, other.misses) == (0, 40)


def test_a_cache_file_that_is_not_a_cache_of_this_schema_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".redline" / CACHE_FILE
    path.parent.mkdir()
    uncached = _check(ParseCache(None))
    # A file damaged on disk, then one written by the previous layout of the cache.
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    damaged = ParseCache(path)
    assert _check(damaged) == uncached and damaged.misses == 40
    assert _check(warm := ParseCache(path)) == uncached and warm.hits == 40
    path.unlink()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE meta (version TEXT NOT NULL)")
        db.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, entry TEXT)")
        db.execute("INSERT INTO meta VALUES (?)", (f"1:{parsecache.__version__}",))
        db.commit()
    older = ParseCache(path)
    assert _check(older) == uncached and older.misses == 40
    assert _check(warm := ParseCache(path)) == uncached and warm.hits == 40
    # Entries that are not what this redline writes are read as none: their files again.
    with contextlib.closing(sqlite3.connect(path)) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM entries ORDER BY key LIMIT 3")]
        for key, garbage in zip(keys, ['{"id": "case-', "{}", '{"inputs": 5}'], strict=True):
            db.execute("UPDATE entries SET entry = ? WHERE key = ?", (garbage, key))
        db.commit()
    damaged_entries = ParseCache(path)
    assert _check(damaged_entries) == uncached and damaged_entries.misses == 3


def _check_into(path: Path) -> None:
    check_suites([Path("cases")], None, ParseCache(path), jobs=2)


def test_checks_running_at_once_leave_one_complete_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three parallel checks started together: six processes write into one new cache
    file, none loses another's entries."""
    _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cases_module, "PARALLEL_FILES", 0)
    path = tmp_path / ".redline" / CACHE_FILE
    alone = check_suites([Path("cases")], None, ParseCache(None))
    context = multiprocessing.get_context("fork")
    checks = [context.Process(target=_check_into, args=(path,)) for _ in range(3)]
    for check in checks:
        check.start()
    for check in checks:
        check.join(timeout=120)
    assert [check.exitcode for check in checks] == [0, 0, 0]
    warm = ParseCache(path)  # one process, so its counts are every file's
    assert check_suites([Path("cases")], None, warm) == alone
    assert (warm.hits, warm.misses) == (40, 0)


def test_validate_prints_the_same_with_a_cold_cache_a_warm_one_and_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "redline.toml").write_text('[models]\nfake = "openai:gpt-x-2025-01-01"\n')
    outputs = []
    for argv in (["validate", "--no-cache"], ["validate"], ["validate"]):
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    assert "40 case(s)" in outputs[0]
    assert (tmp_path / ".redline" / CACHE_FILE).is_file()


def test_a_check_in_two_processes_finds_what_one_process_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cases_module, "PARALLEL_FILES", 0)
    path = tmp_path / ".redline" / CACHE_FILE
    alone = check_suites([Path("cases")], None, ParseCache(None))
    assert check_suites([Path("cases")], None, ParseCache(path), jobs=2) == alone
    warm = ParseCache(path)  # each process wrote its own entries
    assert check_suites([Path("cases")], None, warm, jobs=2) == alone and warm.misses == 0

    # A case id used in both processes' shares, a broken file, and the suite's own problem.
    (folder / _file_in_shard(1, 2, "a")).write_text(_case_text("same-id"), encoding="utf-8")
    (folder / _file_in_shard(2, 2, "b")).write_text(_case_text("same-id"), encoding="utf-8")
    (folder / _file_in_shard(2, 2, "c")).write_text("id: [unclosed\n", encoding="utf-8")
    suite_yaml = folder / "suite.yaml"
    suite_yaml.write_text(suite_yaml.read_text(encoding="utf-8") + "unknown_key: 1\n")
    found = []
    for jobs in (1, 2):
        with pytest.raises(ProblemsError) as err:
            check_suites([Path("cases")], None, ParseCache(None), jobs=jobs)
        found.append([(p.path, p.line, p.message.split(" (")[0]) for p in err.value.problems])
    assert found[0] == found[1]
    text = "\n".join(m for _, _, m in found[1])
    assert text.count("unknown_key") == 1 and "case id 'same-id' is also used by" in text


def test_loading_pauses_the_cycle_collector_only_while_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large suite is read with Python's cycle collector paused; a process that loads a
    suite (the app, a pytest session) gets it back as it was, on success and on problems."""
    import gc

    folder = _suite(tmp_path, cases=3)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "redline.toml").write_text('[models]\nfake = "openai:gpt-x-2025-01-01"\n')
    seen: list[bool] = []
    real = cases_module._CaseLoader.load

    def load(self: cases_module._CaseLoader) -> Case | None:
        seen.append(gc.isenabled())
        return real(self)

    monkeypatch.setattr(cases_module._CaseLoader, "load", load)
    assert len(load_suites([Path("cases")], load_config())[0].cases) == 3
    assert gc.isenabled()
    (folder / "bad.yaml").write_text("id: bad\nassert: [1\n")
    with pytest.raises(ProblemsError):
        load_suites([Path("cases")], load_config())
    assert gc.isenabled()
    assert seen and not any(seen)
    gc.disable()
    try:
        with pytest.raises(ProblemsError):
            load_suites([Path("cases")], load_config())
        assert not gc.isenabled()
    finally:
        gc.enable()
