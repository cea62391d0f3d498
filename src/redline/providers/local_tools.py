"""Tool calls for the embedded model, whatever its chat template says about tools.

llama.cpp renders tools only for a chat template written for them; with any other (the
default SmolLM2's included) it drops them silently, and the model would answer as if it
had none. So redline asks the embedded model in one format every GGUF can follow: the
tools are described in the system prompt and the answer is constrained by llama.cpp's
JSON-schema sampling to either `{"tool_calls": [{"name": ..., "arguments": {...}}]}` or
`{"response": "..."}` (the response format's schema in place of the text when the request
has one; `tool_choice` narrows that: `required` and a named function allow
only calls, `none` sends no tools at all). The conversation's earlier calls and results are
written back in the same format, so the model reads its own turns as it wrote them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from redline.providers.http_provider import Answer
from redline.vocabulary.messages import (
    FinishReason,
    Message,
    Role,
    ToolCall,
    ToolChoice,
    ToolChoiceMode,
    ToolDefinition,
)

_INSTRUCTIONS = (
    "You can call these tools. To call one or more, answer only with the JSON "
    '{{"tool_calls": [{{"name": <tool name>, "arguments": {{...}}}}]}}; '
    'to answer the user, answer only with {{"response": <your answer>}}.\n'
    "Tools:\n{tools}"
)


def sends_tools(tools: Sequence[ToolDefinition], choice: ToolChoice | None) -> bool:
    return bool(tools) and (choice is None or choice.mode is not ToolChoiceMode.NONE)


def tool_system(tools: Sequence[ToolDefinition]) -> str:
    """The system prompt paragraph describing the tools."""
    described = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            ensure_ascii=False,
        )
        for t in tools
    )
    return _INSTRUCTIONS.format(tools=described)


def answer_schema(
    tools: Sequence[ToolDefinition],
    choice: ToolChoice | None,
    response: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON Schema the answer is sampled under; `response` is the final answer's schema
    (a response format's), text when None."""
    allowed = [t for t in tools if choice is None or choice.name in (None, t.name)]
    call = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": dict(t.parameters)},
                "required": ["name", "arguments"],
            }
            for t in allowed
        ]
    }
    calls = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
        "required": ["tool_calls"],
    }
    if choice is not None and choice.mode in (ToolChoiceMode.REQUIRED, ToolChoiceMode.FUNCTION):
        return calls
    answer = {
        "type": "object",
        "properties": {"response": dict(response) if response else {"type": "string"}},
        "required": ["response"],
    }
    return {"anyOf": [calls, answer]}


def history(conversation: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as plain chat turns: calls and results written in the answer format."""
    out: list[dict[str, Any]] = []
    for m in conversation:
        if m.role is Role.ASSISTANT and m.tool_calls:
            calls = [{"name": c.name, "arguments": c.parsed()[0] or {}} for c in m.tool_calls]
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": calls})})
        elif m.role is Role.TOOL:
            result = {"tool_result": {"id": m.tool_call_id, "content": m.text}}
            out.append({"role": "user", "content": json.dumps(result, ensure_ascii=False)})
        else:
            out.append({"role": str(m.role), "content": m.text})
    return out


def read_answer(answer: Answer, step: int) -> Answer:
    """The tool calls (or the response text) in a constrained answer; an answer cut before
    its JSON closed is kept as written, like any truncated output."""
    try:
        data = json.loads(answer.text)
    except ValueError:
        return answer
    if not isinstance(data, dict):
        return answer
    if "response" in data:
        reply = data["response"]
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return dataclasses.replace(answer, text=text)
    calls = data.get("tool_calls")
    if not isinstance(calls, list):
        return answer
    found = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return answer
        arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False, separators=(",", ":"))
        found.append(ToolCall(f"call_{step}_{i}", call["name"], arguments))
    return dataclasses.replace(
        answer, text="", tool_calls=tuple(found), finish_reason=FinishReason.TOOL_CALLS
    )


__all__ = ["answer_schema", "history", "read_answer", "sends_tools", "tool_system"]
