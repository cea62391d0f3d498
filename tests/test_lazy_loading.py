"""A run loads only the machinery its cases use: start-up stays short for a Layer 1 suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from casefiles import CASE_HEAD, write_suite

_HEAVY = ("numpy", "jsonschema", "pydantic", "redline.judge.answer", "redline.semantic.scorer")

_LOAD = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from redline.suite.cases import load_suites\n"
    "suites = load_suites([Path(sys.argv[1])])\n"
    "names = [a.type_name for s in suites for c in s.cases for a in c.assertions]\n"
    f"heavy = {_HEAVY!r}\n"
    "print(json.dumps({'types': names, 'loaded': [m for m in heavy if m in sys.modules]}))\n"
)


def _load_in_fresh_process(folder: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded: dict[str, list[str]] = json.loads(done.stdout)
    return loaded


def test_a_layer_1_suite_loads_no_model_judge_or_schema_machinery(tmp_path: Path) -> None:
    asserts = (
        "assert:\n  - {type: contains, value: ok}\n  - {type: compression-ratio, value: 0.3}\n"
    )
    folder = write_suite(tmp_path, {"a.yaml": "id: a\n" + CASE_HEAD + asserts + "\n"})

    result = _load_in_fresh_process(folder)

    assert result == {"types": ["contains", "compression-ratio"], "loaded": []}


@pytest.mark.parametrize(
    ("assertion", "module"),
    [
        ("{type: mentions, value: refund}", "redline.semantic.scorer"),
        ("{type: is-json, schema: file://schema.json}", "jsonschema"),
    ],
)
def test_a_suite_that_uses_more_loads_what_it_uses(
    tmp_path: Path, assertion: str, module: str
) -> None:
    folder = write_suite(
        tmp_path,
        {"a.yaml": "id: a\n" + CASE_HEAD + f"assert:\n  - {assertion}\n"},
        files={"schema.json": '{"type": "object"}'},
    )

    result = _load_in_fresh_process(folder)

    assert result["types"] == [assertion.split(",")[0].split(": ")[1]]
    assert module in result["loaded"]


def test_the_after_run_summary_loads_no_model_judge_or_schema_machinery(tmp_path: Path) -> None:
    """Every `redline run` prints its summary: that must not cost the semantic backend's
    start-up (numpy and the rest) for a suite that never uses it."""
    folder = write_suite(
        tmp_path, {"a.yaml": "id: a\n" + CASE_HEAD + "assert:\n  - {type: contains, value: ok}\n"}
    )
    code = _LOAD.replace(
        "suites = load_suites",
        "import redline.cli.run_summary, redline.cli.run\nsuites = load_suites",
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout)["loaded"] == []
