"""`redline triage` without a terminal: its errors, and that the engine stays Textual-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from redline.cli import main


def test_triage_without_a_store_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["triage"]) == 2
    assert "run `redline run` first" in capsys.readouterr().err


def test_triage_with_an_unknown_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from triage_store import build_store

    build_store(tmp_path / "redline.db").close()
    monkeypatch.chdir(tmp_path)
    assert main(["triage", "nope", "--store", str(tmp_path / "redline.db")]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_the_cli_imports_textual_only_when_triage_runs() -> None:
    code = "import sys, redline.cli; redline.cli.build_parser(); print('textual' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
