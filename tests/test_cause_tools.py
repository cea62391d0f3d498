"""The cause analysis of a tool-call regression: the reference arm restores the tools the
suite sent at the reference revision, so a reordered tools file is found as the prompt
change it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cause_repo import CASE, SUITE, History
from redline.deciding.cause import ArmKind, Change
from redline.vocabulary.causes import Cause
from servers import LoopbackLLMServer

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("lookup_order", "issue_refund")
]
AGENT_CASE = """\
id: 0042-amount
provenance: {ticket: SUP-42, note: the agent must read the order first}
messages:
  - {role: user, content: "Refund order A-1. MODE:tool"}
tool_results:
  - {tool: lookup_order, content: delivered}
  - {tool: issue_refund, content: refunded}
samples: 5
assert:
  - {type: tool-called, value: lookup_order, order: 1}
"""


@pytest.fixture
def history(
    tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[History]:
    monkeypatch.setenv("REDLINE_LOOPBACK_KEY", "k")
    history = History.create(tmp_path, llm_server)
    suite = f"cases/{SUITE}"
    suite_yaml = (history.root / suite / "suite.yaml").read_text()
    history.write(f"{suite}/suite.yaml", suite_yaml + "tools: file://tools.json\n")
    history.write(f"{suite}/tools.json", json.dumps(TOOLS))
    history.write(f"{suite}/{CASE}.yaml", AGENT_CASE)
    history.commit("the refund agent")
    monkeypatch.chdir(history.root)
    yield history
    history.close()


def test_a_reordered_tools_file_is_the_prompt_change_behind_a_tool_regression(
    history: History,
) -> None:
    green = history.run()
    assert history.case(green).passes == 5
    history.repo.git.checkout("-b", "feature")
    history.write(f"cases/{SUITE}/tools.json", json.dumps(TOOLS[::-1]))
    history.commit("refund tool first")
    red = history.run()
    assert history.case(red).passes == 0  # the agent now refunds before reading the order

    diagnosis = history.analyse(red)

    assert diagnosis.cause is Cause.PROMPT
    assert Change.PROMPT in [c.kind for c in diagnosis.changes]
    assert "suite tools" in [c.detail for c in diagnosis.changes]
    reference = next(a for a in diagnosis.arms if a.kind is ArmKind.REFERENCE_PROMPT)
    assert reference.passes == reference.samples >= 5
