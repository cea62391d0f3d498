"""The guard on tool and conversation cases: what the suite sends (messages, tools,
tool_choice, response_format) is the prompt; a case's conversation and tool fixtures are
the case; removing `tool-called`, widening its argument schema or dropping
`tool-args-valid` lowers the bar."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from redline.guard import Kind, check_commit
from test_guard import BASE_CASE, CASE, SUITE, TempRepo, base_repo, find

TOOLS_FILE = "cases/support/tools/support.json"
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "parameters": {
                "type": "object",
                "properties": {"amount_cents": {"type": "integer", "maximum": 5000}},
                "required": ["amount_cents"],
            },
        },
    }
]
AGENT_CASE: dict[str, Any] = {
    **BASE_CASE,
    "messages": [
        {"role": "user", "content": "Refund order A-1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "issue_refund", "arguments": '{"amount_cents": 100}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "refunded"},
    ],
    "tool_results": [{"tool": "issue_refund", "content": "refunded"}],
    "assert": [
        {
            "type": "tool-called",
            "value": "issue_refund",
            "args": {"type": "object", "properties": {"amount_cents": {"maximum": 5000}}},
        },
        {"type": "tool-args-valid"},
        {"type": "contains", "value": "refund"},
    ],
}


def agent_repo(tmp_path: Path) -> TempRepo:
    suite = {**SUITE, "tools": "file://tools/support.json", "tool_choice": "auto"}
    repo = base_repo(tmp_path, AGENT_CASE)
    repo.write("cases/support/suite.yaml", suite)
    (tmp_path / TOOLS_FILE).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / TOOLS_FILE).write_text(json.dumps(TOOLS), encoding="utf-8")
    repo.commit("agent suite")
    return repo


Mutation = Callable[[dict[str, Any]], None]


def _drop(index: int) -> Mutation:
    return lambda case: case["assert"].pop(index)


def _widen(case: dict[str, Any]) -> None:
    case["assert"][0]["args"]["properties"]["amount_cents"]["maximum"] = 50000


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_drop(0), "tool-called"),
        (_drop(1), "tool-args-valid"),
        (_widen, "maximum 5000 → 50000"),
    ],
    ids=["tool-called removed", "tool-args-valid dropped", "args schema widened"],
)
def test_lowering_a_tool_bar_with_a_tools_change_is_refused(
    tmp_path: Path, mutate: Mutation, expected: str
) -> None:
    repo = agent_repo(tmp_path)
    case = copy.deepcopy(AGENT_CASE)
    mutate(case)
    repo.write(CASE, case)
    tools = copy.deepcopy(TOOLS)
    tools[0]["function"]["description"] = "Refund part of an order"
    (tmp_path / TOOLS_FILE).write_text(json.dumps(tools), encoding="utf-8")

    report = check_commit(tmp_path, repo.commit("tools and bar"))

    find(report, Kind.PROMPT, f"prompt {TOOLS_FILE}")
    find(report, Kind.LOOSENING, expected)
    assert report.blocked


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tool_choice", {"function": {"name": "issue_refund"}}),
        ("messages", [{"role": "user", "content": "Hi, I am a returning customer."}]),
        ("response_format", {"json_schema": {"type": "object"}, "strict": True}),
    ],
)
def test_an_inline_suite_conversation_setting_is_a_prompt_change(
    tmp_path: Path, key: str, value: Any
) -> None:
    repo = agent_repo(tmp_path)
    suite = {**SUITE, "tools": "file://tools/support.json", "tool_choice": "auto", key: value}
    repo.write("cases/support/suite.yaml", suite)
    case = copy.deepcopy(AGENT_CASE)
    case["assert"].pop(0)
    repo.write(CASE, case)

    report = check_commit(tmp_path, repo.commit(f"{key} and bar"))

    find(report, Kind.PROMPT, f"suite support: {key}")
    find(report, Kind.LOOSENING, "tool-called")
    assert report.blocked


def test_a_case_conversation_or_fixture_edit_is_a_case_change_not_a_prompt_change(
    tmp_path: Path,
) -> None:
    repo = agent_repo(tmp_path)
    case = copy.deepcopy(AGENT_CASE)
    case["messages"][0]["content"] = "Refund order A-2, it arrived broken"
    case["tool_results"][0]["content"] = "refund queued"
    repo.write(CASE, case)

    report = check_commit(tmp_path, repo.commit("case edit"))

    assert not report.blocked
    assert not [f for f in report.findings if f.kind is Kind.PROMPT]


def test_raising_max_steps_with_a_tools_change_is_a_loosening(tmp_path: Path) -> None:
    repo = agent_repo(tmp_path)
    case = copy.deepcopy(AGENT_CASE)
    case["max_steps"] = 3
    repo.write(CASE, case)
    repo.commit("at most three requests")
    case["max_steps"] = 10
    repo.write(CASE, case)
    tools = copy.deepcopy(TOOLS)
    tools[0]["function"]["description"] = "Refund part of an order"
    (tmp_path / TOOLS_FILE).write_text(json.dumps(tools), encoding="utf-8")

    report = check_commit(tmp_path, repo.commit("tools and more steps"))

    find(report, Kind.LOOSENING, "max_steps 3 → 10")
    assert report.blocked
