"""Tool calls on the embedded model: described in the system prompt, the answer sampled
under a JSON Schema that allows only a call of a declared tool (with arguments of its
schema) or a final response, read back as tool calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from redline.cli import main
from redline.providers.http_provider import Answer
from redline.providers.local_tools import answer_schema, history, read_answer, sends_tools
from redline.running.store import RunStore
from redline.vocabulary.messages import (
    FinishReason,
    Message,
    Role,
    ToolCall,
    ToolChoice,
    ToolChoiceMode,
    ToolDefinition,
)

LOOKUP = ToolDefinition(
    "lookup_order",
    {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    "Find an order",
)
REFUND = ToolDefinition("issue_refund", {"type": "object"}, "Refund")


def _valid(schema: dict[str, object], answer: object) -> bool:
    return Draft202012Validator(schema).is_valid(answer)


def test_the_answer_schema_allows_a_declared_call_or_a_response_as_tool_choice_says() -> None:
    call = {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]}
    undeclared = {"tool_calls": [{"name": "drop_tables", "arguments": {}}]}
    missing_arg = {"tool_calls": [{"name": "lookup_order", "arguments": {}}]}
    response = {"response": "It shipped."}
    auto = answer_schema([LOOKUP, REFUND], None)
    assert _valid(auto, call) and _valid(auto, response)
    assert not _valid(auto, undeclared) and not _valid(auto, missing_arg)
    required = answer_schema([LOOKUP, REFUND], ToolChoice(ToolChoiceMode.REQUIRED))
    assert _valid(required, call) and not _valid(required, response)
    named = answer_schema([LOOKUP, REFUND], ToolChoice(ToolChoiceMode.FUNCTION, "issue_refund"))
    assert not _valid(named, call)
    assert _valid(named, {"tool_calls": [{"name": "issue_refund", "arguments": {}}]})
    assert not sends_tools([LOOKUP], ToolChoice(ToolChoiceMode.NONE))


def test_a_constrained_answer_reads_back_as_calls_or_text() -> None:
    raw = '{"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]}'
    answer = read_answer(Answer(raw, FinishReason.STOP, "m", 5, 9), step=2)
    assert answer.tool_calls == (ToolCall("call_2_0", "lookup_order", '{"order_id":"A-1"}'),)
    assert (answer.text, answer.finish_reason) == ("", FinishReason.TOOL_CALLS)
    text = read_answer(Answer('{"response": "Shipped."}', FinishReason.STOP, "m", 5, 9), 0)
    assert (text.text, text.tool_calls) == ("Shipped.", ())
    cut = Answer('{"tool_calls": [{"name": "look', FinishReason.LENGTH, "m", 5, 9)
    assert read_answer(cut, 0) == cut  # truncated: kept as written


def test_earlier_calls_and_results_are_written_back_in_the_answer_format() -> None:
    turns = history(
        [
            Message(Role.USER, "Where is A-1?"),
            Message(
                Role.ASSISTANT,
                "",
                tool_calls=(ToolCall("c1", "lookup_order", '{"order_id": "A-1"}'),),
            ),
            Message(Role.TOOL, "shipped", tool_call_id="c1"),
        ]
    )
    assert turns[1] == {
        "role": "assistant",
        "content": json.dumps(
            {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]}
        ),
    }
    assert turns[2]["role"] == "user" and json.loads(turns[2]["content"]) == {
        "tool_result": {"id": "c1", "content": "shipped"}
    }


@pytest.mark.slow
def test_the_embedded_model_plays_a_tool_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "redline.toml").write_text(
        '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n\n[providers.local]\nthreads = 1\n'
    )
    suite = tmp_path / "agent"
    suite.mkdir()
    (suite / "system.txt").write_text("You are a support agent. Look orders up before answering.")
    tools = [
        {
            "type": "function",
            "function": {
                "name": LOOKUP.name,
                "description": LOOKUP.description,
                "parameters": dict(LOOKUP.parameters),
            },
        }
    ]
    (suite / "tools.json").write_text(json.dumps(tools))
    (suite / "suite.yaml").write_text(
        "name: agent\nprompt: {system: system.txt}\nmodel: local\nsamples: 2\nmax_tokens: 150\n"
        "temperature: 0\nseed: frozen\n"
        "tools: file://tools.json\ntool_choice: required\n"
    )
    (suite / "where.yaml").write_text(
        "id: where\nprovenance: {ticket: T-1, note: test}\n"
        "messages: [{role: user, content: Where is my order A-1?}]\n"
        "tool_results: [{tool: lookup_order, content: shipped yesterday}]\nmax_steps: 2\n"
        "assert: [{type: tool-called, value: lookup_order}, {type: tool-args-valid}]\n"
    )
    monkeypatch.chdir(tmp_path)

    # Green or red (a small model), never inconclusive: its calls are not cut off.
    assert main(["run", "agent", "--quiet"]) in (0, 1)

    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        samples = store.samples(run.id)
    assert len(samples) == 2
    for sample in samples:
        assert sample.steps and sample.steps[0].tool_calls
        assert sample.steps[0].tool_calls[0].name == "lookup_order"
        assert sample.steps[0].tool_results[0].content == "shipped yesterday"


def test_with_a_response_format_the_final_answer_is_sampled_under_its_schema() -> None:
    invoice = {
        "type": "object",
        "properties": {"total": {"type": "integer"}},
        "required": ["total"],
    }
    schema = answer_schema([LOOKUP], None, invoice)
    assert _valid(schema, {"response": {"total": 5}})
    assert not _valid(schema, {"response": "five"})
    answer = read_answer(Answer('{"response": {"total": 5}}', FinishReason.STOP, "m", 1, 1), 0)
    assert json.loads(answer.text) == {"total": 5} and answer.tool_calls == ()
