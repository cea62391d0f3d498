"""Any Chat-Completions-compatible server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio…"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from redline.providers.http_provider import Answer, HttpProvider, MalformedResponse, optional_int
from redline.vocabulary.completion import ChatRequest, FinishReason, Refusal
from redline.vocabulary.messages import (
    Message,
    Part,
    ResponseFormat,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolChoiceMode,
    ToolDefinition,
)

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
}


class OpenAIProvider(HttpProvider):
    """`POST {base_url}/chat/completions`: the conversation, tools and response format in
    the Chat Completions wire format."""

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model.name} | chat_body(request)
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_format is not None:
            body["response_format"] = response_format(request.response_format)
        return body

    def parse(self, body: Any) -> Answer:
        return parse_chat_completion(body)

    def refusal(self, status: int, body: Any) -> tuple[Refusal, str] | None:
        """`insufficient_quota` (HTTP 429 with that code: the plan's quota or the credit is
        spent), which waiting never cures, unlike a rate limit's 429; `model_not_found`."""
        error = body.get("error") if isinstance(body, Mapping) else None
        if not isinstance(error, Mapping):
            return None
        codes = (error.get("code"), error.get("type"))
        refusal = (
            Refusal.ACCOUNT
            if "insufficient_quota" in codes
            else Refusal.MODEL
            if "model_not_found" in codes
            else None
        )
        if refusal is None:
            return None
        return refusal, str(error.get("message") or error.get("code"))


def chat_body(request: ChatRequest) -> dict[str, Any]:
    """The messages, tools and tool choice of a Chat Completions body (also what the local
    model's chat template reads)."""
    body: dict[str, Any] = {"messages": [_message(m) for m in request.conversation()]}
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    return body


def response_format(format: ResponseFormat) -> dict[str, Any]:
    schema: dict[str, Any] = {"name": format.name, "schema": dict(format.schema)}
    if format.strict:
        schema["strict"] = True
    return {"type": "json_schema", "json_schema": schema}


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": str(message.role)}
    if isinstance(message.content, str):
        content: Any = message.content
    else:
        content = [_part(p) for p in message.content]
    if message.tool_calls and content == "":
        content = None
    out["content"] = content
    if message.name is not None:
        out["name"] = message.name
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image_url", "image_url": {"url": part.data_url}}


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = dict(tool.parameters)
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def _tool_choice(choice: ToolChoice) -> Any:
    if choice.mode is ToolChoiceMode.FUNCTION:
        return {"type": "function", "function": {"name": choice.name}}
    return str(choice.mode)


def parse_chat_completion(body: Any) -> Answer:
    """Read a Chat Completions response body (also what the local model returns)."""
    if not isinstance(body, Mapping):
        raise MalformedResponse("the body is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise MalformedResponse("no choices[0] in the body")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise MalformedResponse("no choices[0].message in the body")
    content = message.get("content")
    refusal = message.get("refusal")
    if content is not None and not isinstance(content, str):
        raise MalformedResponse("choices[0].message.content is not a string")
    raw_reason = choices[0].get("finish_reason")
    if isinstance(refusal, str) and refusal:
        reason: FinishReason | None = FinishReason.REFUSAL
        text = content or refusal
    else:
        reason = _finish_reason(raw_reason)
        text = content or ""
    usage = body.get("usage")
    model = body.get("model")
    fingerprint = body.get("system_fingerprint")
    details = usage.get("prompt_tokens_details") if isinstance(usage, Mapping) else None
    return Answer(
        text=text,
        finish_reason=reason,
        model=model if isinstance(model, str) else "",
        input_tokens=optional_int(usage, "prompt_tokens"),
        output_tokens=optional_int(usage, "completion_tokens"),
        tool_calls=_tool_calls(message),
        system_fingerprint=fingerprint if isinstance(fingerprint, str) and fingerprint else None,
        # `prompt_tokens` counts the cached ones too; OpenAI bills no cache writes.
        cached_input_tokens=optional_int(details, "cached_tokens"),
    )


def _tool_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """The calls of a response message, exactly as received (the legacy `function_call`
    too); a call without a function name is a malformed body."""
    raw = message.get("tool_calls")
    legacy = message.get("function_call")
    if raw is None and isinstance(legacy, Mapping):
        raw = [{"id": "", "function": legacy}]
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise MalformedResponse("choices[0].message.tool_calls is not a list")
    calls = []
    for i, entry in enumerate(raw):
        function = entry.get("function") if isinstance(entry, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise MalformedResponse(f"tool_calls[{i}] has no function name")
        assert isinstance(entry, Mapping) and isinstance(function, Mapping)
        call_id = entry.get("id")
        calls.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) else "",
                name=name,
                arguments=arguments_text(function.get("arguments")),
            )
        )
    return tuple(calls)


def arguments_text(raw: object) -> str:
    """A call's arguments as text: the string as sent; an object (some servers send one)
    serialised once, compactly, in the order received."""
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


def _finish_reason(raw: object) -> FinishReason | None:
    if raw is None:
        return None
    return _FINISH_REASONS.get(str(raw), FinishReason.OTHER)
