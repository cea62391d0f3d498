"""`redline show` of a large run (a merged night): what did not pass is listed, the rest counted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redline.cli import main
from runfactory import OK, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run


@pytest.fixture
def big_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    cases = [
        CaseSpec(f"case-{i:04d}", [WRONG] * 5 if i in (7, 300, 599) else [OK] * 5)
        for i in range(600)
    ]
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("bignight0001", cases))
    return "bignight0001"


def test_a_large_run_lists_the_cases_that_did_not_pass_and_counts_the_rest(
    big_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", big_run]) == 0
    out = capsys.readouterr().out
    assert all(f"case-{i:04d}" in out for i in (7, 300, 599))
    assert "case-0008" not in out
    assert "597 of 600 cases passed and are not listed" in out
    assert f"redline show {big_run} --all" in out


def test_a_large_run_that_all_passed_shows_no_empty_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to list: the count and the commands that list it, not a table of headers."""
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    with open_store(tmp_path) as store:
        write_run(
            store, RunSpec("allgreen0001", [CaseSpec(f"c{i:03d}", [OK] * 3) for i in range(250)])
        )
    assert main(["show", "allgreen0001"]) == 0
    out = capsys.readouterr().out
    assert "250 of 250 cases passed and are not listed" in out
    assert "verdicts" not in out and "┃" not in out


def test_all_lists_every_case_of_a_large_run(
    big_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", big_run, "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"case-{i:04d}" in out for i in range(600))
    assert "not listed" not in out


def test_a_small_run_lists_every_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    with open_store(tmp_path) as store:
        write_run(store, RunSpec("small0000001", [CaseSpec(f"c{i}", [OK] * 3) for i in range(5)]))
    assert main(["show", "small0000001"]) == 0
    out = capsys.readouterr().out
    assert all(f"c{i}" in out for i in range(5)) and "not listed" not in out


def test_a_large_run_prints_what_did_not_pass_and_counts_the_rest(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    loopback_config: object,
    loopback_key: str,
) -> None:
    """`redline run` of more cases than a table lists ends as `show` lists the run: the
    cases that did not pass, and how many passed (a 100,000-case table takes a minute)."""
    from test_runner import write_suite

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    cases = {f"c{i:03d}": "MODE:preamble" if i in (5, 250) else "MODE:json" for i in range(260)}
    write_suite(tmp_path, "big", cases, samples=1)

    assert main(["run", "big", "--quiet", "--yes"]) == 1
    out = capsys.readouterr().out
    assert "c005" in out
    assert "c250" in out
    assert "c006" not in out and "c249" not in out
    assert "258 of 260 cases passed and are not listed" in out
    assert "260 case(s): 258 pass, 2 fail" in out

    write_suite(tmp_path, "green", {f"g{i:03d}": "MODE:json" for i in range(60)}, samples=1)
    assert main(["run", "green", "--quiet", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "60 of 60 cases passed and are not listed" in out
    assert "┃" not in out  # no table of headers with nothing under them
    assert re.search(r"^run \w+ \(run\)$", out, re.MULTILINE)


def test_a_run_of_a_few_cases_ends_with_every_case_listed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    loopback_config: object,
    loopback_key: str,
) -> None:
    from redline.cli.run_summary import SUMMARY_LISTS_EVERY_CASE_UP_TO
    from test_runner import write_suite

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    count = SUMMARY_LISTS_EVERY_CASE_UP_TO
    write_suite(tmp_path, "few", {f"c{i:03d}": "MODE:json" for i in range(count)}, samples=1)

    assert main(["run", "few", "--quiet", "--yes"]) == 0
    out = capsys.readouterr().out
    assert all(f"c{i:03d}" in out for i in range(count))
    assert "not listed" not in out
