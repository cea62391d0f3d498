from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from casefiles import CASE_HEAD, write_suite
from redline.cli import main

REPO = Path(__file__).resolve().parents[1]
GOOD = CASE_HEAD + "assert: [{type: contains, value: hello}]\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "redline.toml").write_text('[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_valid_suite_prints_a_summary_and_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(project / "cases", {"a.yaml": GOOD, "b.yaml": GOOD})
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "demo: 2 cases, 2 assertions, model local = local:smollm2-135m-instruct-q4_1" in out
    assert "ok: 1 suite(s), 2 case(s), 2 assertion(s), 6 samples per run" in out


def test_problems_are_printed_with_positions_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(
        project / "suites", {"a.yaml": GOOD + "tier: gold\n", "b.yaml": "samples: x\n" + GOOD}
    )
    assert main(["validate", "suites"]) == 2
    err = capsys.readouterr().err
    assert "2 problem(s) found" in err
    assert "suites/demo/a.yaml:5:7: `tier` must be one of contract, quality" in err
    assert "suites/demo/b.yaml:1:10: `samples` must be a whole number" in err


def test_unpinned_alias_exits_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = write_suite(project / "cases", {"a.yaml": GOOD})
    text = (suite / "suite.yaml").read_text().replace("model: local", "model: prod")
    (suite / "suite.yaml").write_text(text)
    assert main(["validate"]) == 2
    assert "model alias 'prod' is not pinned in redline.toml" in capsys.readouterr().err


def test_the_repository_cases_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "cases", tmp_path / "cases")
    monkeypatch.chdir(tmp_path)
    assert main(["validate"]) == 0
    assert "ok: 4 suite(s)" in capsys.readouterr().out
