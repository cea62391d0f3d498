"""Anthropic's Messages API."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from redline.providers.http_provider import Answer, HttpProvider, MalformedResponse, optional_int
from redline.providers.openai import arguments_text
from redline.vocabulary.completion import (
    UNSET_MAX_TOKENS,
    ChatRequest,
    Completion,
    FinishReason,
    Refusal,
)
from redline.vocabulary.messages import (
    Message,
    Part,
    Role,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolChoiceMode,
)

DEFAULT_MAX_TOKENS = UNSET_MAX_TOKENS
"""The Messages API requires max_tokens; used when the suite sets none."""

_STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.REFUSAL,
    "tool_use": FinishReason.TOOL_CALLS,
}


class AnthropicProvider(HttpProvider):
    """`POST {base_url}/v1/messages`; no seed parameter exists in this API.

    System messages go in `system`; tool calls are `tool_use` blocks and their answers
    `tool_result` blocks of a user turn. A response format is a tool the model is made to
    call, whose input schema is the format's schema: its input is the answer's text.
    """

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        version = str(self.config.options["anthropic_version"])
        headers = {"anthropic-version": version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = _messages(request.conversation())
        body: dict[str, Any] = {
            "model": self.model.name,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        tools = [_tool(t.name, t.description, t.parameters) for t in request.tools]
        choice = None if request.tool_choice is None else _tool_choice(request.tool_choice)
        answer = request.response_format
        if answer is not None:
            tools.append(_tool(answer.name, RESPONSE_TOOL_DESCRIPTION, answer.schema))
            if not request.tools:
                choice = {"type": "tool", "name": answer.name}
            elif choice is None or choice == {"type": "auto"}:
                choice = {"type": "any"}
        if tools:
            body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = choice
        return body

    def finish(self, request: ChatRequest, completion: Completion) -> Completion:
        if request.response_format is None:
            return completion
        return structured_answer(completion, request.response_format.name)

    def refusal(self, status: int, body: Any) -> tuple[Refusal, str] | None:
        """A credit balance too low (HTTP 400, an `invalid_request_error` saying so: no
        request of the account is served until credit is bought); a `not_found_error` on
        the model ("model: claude-x")."""
        error = body.get("error") if isinstance(body, Mapping) else None
        message = error.get("message") if isinstance(error, Mapping) else None
        if not isinstance(error, Mapping) or not isinstance(message, str):
            return None
        if "credit balance is too low" in message.lower():
            return Refusal.ACCOUNT, message
        if error.get("type") == "not_found_error" and message.startswith("model:"):
            return Refusal.MODEL, message
        return None

    def parse(self, body: Any) -> Answer:
        if not isinstance(body, Mapping):
            raise MalformedResponse("the body is not a JSON object")
        content = body.get("content")
        if not isinstance(content, list):
            raise MalformedResponse("no content list in the body")
        parts: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            if not isinstance(block, Mapping):
                raise MalformedResponse("a content block is not an object")
            if block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise MalformedResponse("a text block has no text")
                parts.append(text)
            elif block.get("type") == "tool_use":
                name, call_id = block.get("name"), block.get("id")
                if not isinstance(name, str) or not name:
                    raise MalformedResponse("a tool_use block has no name")
                calls.append(
                    ToolCall(
                        id=call_id if isinstance(call_id, str) else "",
                        name=name,
                        arguments=arguments_text(block.get("input")),
                    )
                )
        raw_reason = body.get("stop_reason")
        reason = None if raw_reason is None else _STOP_REASONS.get(str(raw_reason))
        if raw_reason is not None and reason is None:
            reason = FinishReason.OTHER
        usage = body.get("usage")
        model = body.get("model")
        # Anthropic counts cache reads and writes apart from `input_tokens`; redline's
        # input tokens are the whole prompt, the cached ones a part of it.
        fresh = optional_int(usage, "input_tokens")
        read = optional_int(usage, "cache_read_input_tokens")
        written = optional_int(usage, "cache_creation_input_tokens")
        return Answer(
            text="".join(parts),
            finish_reason=reason,
            model=model if isinstance(model, str) else "",
            input_tokens=None if fresh is None else fresh + (read or 0) + (written or 0),
            output_tokens=optional_int(usage, "output_tokens"),
            tool_calls=tuple(calls),
            cached_input_tokens=read,
            cache_write_tokens=written,
        )


RESPONSE_TOOL_DESCRIPTION = "Give your answer as this tool's input."


def structured_answer(completion: Completion, tool: str) -> Completion:
    """The answer a forced response tool carried: its input is the output text, and the
    call is no tool call of the sample's. Unchanged when the model did not call it."""
    answers = [c for c in completion.tool_calls if c.name == tool]
    if not answers:
        return completion
    rest = tuple(c for c in completion.tool_calls if c.name != tool)
    reason = completion.finish_reason
    if not rest and reason is FinishReason.TOOL_CALLS:
        reason = FinishReason.STOP
    return dataclasses.replace(
        completion, text=answers[0].arguments, tool_calls=rest, finish_reason=reason
    )


def _messages(conversation: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(the system text, the Messages API turns): answers to tool calls in a row are one
    user turn of `tool_result` blocks."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in conversation:
        if message.role is Role.SYSTEM:
            system.append(message.text)
        elif message.role is Role.TOOL:
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.text,
            }
            last = turns[-1] if turns else None
            if last is not None and last.get("role") == "user" and _all_results(last):
                last["content"].append(result)
            else:
                turns.append({"role": "user", "content": [result]})
        elif message.role is Role.ASSISTANT and message.tool_calls:
            blocks: list[dict[str, Any]] = []
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            for call in message.tool_calls:
                args, _ = call.parsed()
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": args or {}}
                )
            turns.append({"role": "assistant", "content": blocks})
        else:
            content: Any = message.content
            if not isinstance(content, str):
                content = [_block(p) for p in content]
            turns.append({"role": str(message.role), "content": content})
    return "\n\n".join(s for s in system if s), turns


def _all_results(turn: Mapping[str, Any]) -> bool:
    content = turn.get("content")
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": part.media_type, "data": part.base64},
    }


def _tool(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name}
    if description:
        tool["description"] = description
    tool["input_schema"] = dict(schema)
    return tool


def _tool_choice(choice: ToolChoice) -> dict[str, Any]:
    if choice.mode is ToolChoiceMode.FUNCTION:
        return {"type": "tool", "name": choice.name}
    if choice.mode is ToolChoiceMode.REQUIRED:
        return {"type": "any"}
    return {"type": str(choice.mode)}
