"""Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redline.providers.http_provider import Answer, HttpProvider, MalformedResponse, optional_int
from redline.vocabulary.completion import ChatRequest, FinishReason

DEFAULT_MAX_TOKENS = 1024
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
    """`POST {base_url}/v1/messages`; no seed parameter exists in this API."""

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
        body: dict[str, Any] = {
            "model": self.model.name,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": request.user}],
        }
        if request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def parse(self, body: Any) -> Answer:
        if not isinstance(body, Mapping):
            raise MalformedResponse("the body is not a JSON object")
        content = body.get("content")
        if not isinstance(content, list):
            raise MalformedResponse("no content list in the body")
        parts: list[str] = []
        for block in content:
            if not isinstance(block, Mapping):
                raise MalformedResponse("a content block is not an object")
            if block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise MalformedResponse("a text block has no text")
                parts.append(text)
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
            cached_input_tokens=read,
            cache_write_tokens=written,
        )
