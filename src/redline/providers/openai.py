"""Any Chat-Completions-compatible server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio…"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redline.providers.http_provider import Answer, HttpProvider, MalformedResponse, optional_int
from redline.vocabulary.completion import ChatRequest, FinishReason

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
}


class OpenAIProvider(HttpProvider):
    """`POST {base_url}/chat/completions` with a system and a user message."""

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model.name,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
        }
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": request.response_schema},
            }
        return body

    def parse(self, body: Any) -> Answer:
        return parse_chat_completion(body)


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
        system_fingerprint=fingerprint if isinstance(fingerprint, str) and fingerprint else None,
        # `prompt_tokens` counts the cached ones too; OpenAI bills no cache writes.
        cached_input_tokens=optional_int(details, "cached_tokens"),
    )


def _finish_reason(raw: object) -> FinishReason | None:
    if raw is None:
        return None
    return _FINISH_REASONS.get(str(raw), FinishReason.OTHER)
