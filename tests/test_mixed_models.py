"""Two suites pinned to different aliases: validate says what `run` will say, with the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from casefiles import CASE_HEAD, SUITE_YAML, write_suite
from redline.cli import main

GOOD = CASE_HEAD + "assert: [{type: contains, value: hello}]\n"


@pytest.fixture
def two_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "redline.toml").write_text(
        '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n'
        'other = "openai:other-model-2026-01"\n'
    )
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path / "cases" / "one", {"a.yaml": GOOD})
    other = SUITE_YAML.replace("name: demo", "name: second").replace("model: local", "model: other")
    write_suite(tmp_path / "cases" / "two", {"a.yaml": GOOD}, suite_yaml=other)
    return tmp_path


def test_validate_names_each_suites_model_line_and_the_commands_that_run_them(
    two_models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    lines = (two_models / "cases/one/demo/suite.yaml").read_text().splitlines()
    number = next(n for n, line in enumerate(lines, 1) if line.startswith("model:"))
    assert f"cases/one/demo/suite.yaml:{number}: model local (suite demo)" in note
    assert f"cases/two/demo/suite.yaml:{number}: model other (suite second)" in note
    assert "`redline run cases/one/demo`, `redline run cases/two/demo`" in note


def test_run_refuses_with_the_same_words_validate_printed(
    two_models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["validate"])
    note = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("note: "))
    assert main(["run"]) == 2
    assert note.removeprefix("note: ") in capsys.readouterr().err
