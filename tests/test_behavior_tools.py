"""`check_behavior` on what an agent produced: a chat API's answer with tool calls (OpenAI
or Anthropic shape, or an SDK object), or a message list — the same checks as the case
file's tool assertions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from redline import check_behavior
from redline.suite.behavior import assert_behavior

REFUND = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "issue_refund",
                "arguments": '{"order_id": "A-1", "amount_cents": 4200}',
            },
        }
    ],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount_cents": {"type": "integer", "maximum": 5000},
                },
                "required": ["order_id", "amount_cents"],
            },
        },
    }
]


def test_an_openai_answer_with_a_tool_call_passes_the_tool_checks() -> None:
    chain = check_behavior(REFUND)
    chain.called_tool(
        "issue_refund",
        args={"properties": {"amount_cents": {"const": 4200}}},
        python="args['order_id'] == 'A-1'",
        times=1,
    ).not_called_tool("lookup_order").tool_args_valid(TOOLS)
    chain.verify()
    assert [r.status.value for r in chain.results] == ["passed", "passed", "passed"]


def test_a_conversation_counts_every_turns_calls_and_answers_with_the_last() -> None:
    conversation = [
        {"role": "user", "content": "Refund A-1 please"},
        REFUND,
        {"role": "tool", "tool_call_id": "call_1", "content": "refunded"},
        {"role": "assistant", "content": "Your refund of 42.00 is on its way."},
    ]
    chain = check_behavior(conversation).called_tool("issue_refund", order=1)
    chain.is_json()
    with pytest.raises(AssertionError) as failed:
        chain.verify()
    assert "is-json" in str(failed.value) and "issue_refund" in str(failed.value)
    assert chain.output == "Your refund of 42.00 is on its way."


def test_no_tool_call_fails_naming_the_call_and_wrong_arguments_say_why() -> None:
    with pytest.raises(AssertionError, match="issue_refund"):
        assert_behavior(REFUND).no_tool_call()
    with pytest.raises(AssertionError, match="50000 was expected"):
        assert_behavior(REFUND).called_tool(
            "issue_refund", args={"properties": {"amount_cents": {"const": 50000}}}
        )


def test_an_anthropic_answer_and_an_sdk_object_read_the_same() -> None:
    anthropic = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Refunding."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "issue_refund",
                "input": {"order_id": "A-1", "amount_cents": 4200},
            },
        ],
    }
    check_behavior(anthropic).called_tool("issue_refund", times=1).tool_args_valid(TOOLS).verify()

    @dataclass
    class Function:
        name: str
        arguments: str

    @dataclass
    class Call:
        id: str
        function: Function
        type: str = "function"

    @dataclass
    class SdkMessage:
        role: str = "assistant"
        content: str | None = None
        tool_calls: list[Any] = field(default_factory=list)

        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            calls = [
                {"id": c.id, "type": c.type, "function": vars(c.function)} for c in self.tool_calls
            ]
            return {"role": self.role, "tool_calls": calls}

    sdk = SdkMessage(tool_calls=[Call("call_9", Function("issue_refund", "{not json"))])
    chain = check_behavior(sdk).called_tool("issue_refund", args={"type": "object"})
    with pytest.raises(AssertionError, match="not JSON"):
        chain.verify()


def test_a_message_list_that_is_not_one_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        check_behavior([{"role": "robot", "content": "beep"}])
    with pytest.raises(ValueError, match="no `id`"):
        check_behavior([{"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}])
