"""Logged model exchanges read from the formats apps and tracers write.

An OpenAI chat-completions request/response pair (JSON, or a JSONL log of them), an
Anthropic messages pair, and OpenTelemetry GenAI spans exported as OTLP JSON (the
`gen_ai.*` semantic conventions: `gen_ai.input.messages` / `gen_ai.output.messages`,
the indexed `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes, or the message
events). The conversation is kept exactly as logged.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class UnreadableTrace(ValueError):
    """A file (or one line of it) that holds no exchange redline can read."""


@dataclass(frozen=True)
class Exchange:
    """One logged request and its answer."""

    format: str
    messages: list[dict[str, Any]]
    answer: str
    source: str
    #: The request, response or trace id the log gives (None: it gives none).
    trace_id: str | None = None
    timestamp: str | None = None
    model: str | None = None
    vars: dict[str, str] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: The line of a JSONL log the exchange was read from.
    line: int | None = None


def read_exchanges(path: Path) -> list[Exchange]:
    """Every exchange in the file; UnreadableTrace naming the file (and line) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableTrace(
            f"{path}: cannot be read ({exc}); give the file a logged exchange was exported to"
        ) from None
    try:
        data = json.loads(text)
    except ValueError:
        return _jsonl(text, str(path))
    found = _exchanges(data, str(path))
    if not found:
        raise UnreadableTrace(
            f"{path}: holds no request/response pair (OpenAI or Anthropic) nor OTLP GenAI "
            "spans; see docs/targets.md for the formats read"
        )
    return found


def _jsonl(text: str, source: str) -> list[Exchange]:
    found: list[Exchange] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise UnreadableTrace(f"{source}:{number}: not JSON ({exc.args[0]})") from None
        exchanges = _exchanges(data, source)
        if not exchanges:
            raise UnreadableTrace(f"{source}:{number}: not a request/response pair")
        found += [_at_line(e, number) for e in exchanges]
    if not found:
        raise UnreadableTrace(f"{source}: is empty")
    return found


def _at_line(exchange: Exchange, line: int) -> Exchange:
    from dataclasses import replace

    return replace(exchange, line=line)


def _exchanges(data: Any, source: str) -> list[Exchange]:
    if isinstance(data, list):
        return [e for item in data for e in _exchanges(item, source)]
    if not isinstance(data, Mapping):
        return []
    if "resourceSpans" in data:
        return _otlp(data, source)
    request, response = data.get("request"), data.get("response")
    if not isinstance(request, Mapping) or not isinstance(response, Mapping):
        return []
    if isinstance(response.get("choices"), list):
        return [_openai(data, request, response, source)]
    if isinstance(response.get("content"), list):
        return [_anthropic(data, request, response, source)]
    return []


def _openai(
    data: Mapping[str, Any], request: Mapping[str, Any], response: Mapping[str, Any], source: str
) -> Exchange:
    choices = response["choices"]
    if not choices or not isinstance(choices[0], Mapping):
        raise UnreadableTrace(f"{source}: the response has no choices")
    message = choices[0].get("message") or {}
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise UnreadableTrace(f"{source}: the request has no messages")
    created = response.get("created")
    return Exchange(
        format="openai",
        messages=list(messages),
        answer=str(message.get("content") or ""),
        source=source,
        trace_id=_text(response.get("id") or data.get("id") or data.get("request_id")),
        timestamp=_when(created) or _text(data.get("timestamp")),
        model=_text(response.get("model") or request.get("model")),
        vars=_vars(request.get("metadata")),
        tool_calls=list(message.get("tool_calls") or []),
    )


def _anthropic(
    data: Mapping[str, Any], request: Mapping[str, Any], response: Mapping[str, Any], source: str
) -> Exchange:
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise UnreadableTrace(f"{source}: the request has no messages")
    system = request.get("system")
    head: list[dict[str, Any]] = []
    if isinstance(system, str) and system:
        head = [{"role": "system", "content": system}]
    elif isinstance(system, list):
        text = "".join(b.get("text", "") for b in system if isinstance(b, Mapping))
        head = [{"role": "system", "content": text}] if text else []
    blocks = [b for b in response["content"] if isinstance(b, Mapping)]
    answer = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    calls = [
        {"name": b.get("name"), "arguments": b.get("input", {})}
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    return Exchange(
        format="anthropic",
        messages=head + list(messages),
        answer=answer,
        source=source,
        trace_id=_text(response.get("id") or data.get("id") or data.get("request_id")),
        timestamp=_text(data.get("timestamp")),
        model=_text(response.get("model") or request.get("model")),
        tool_calls=calls,
    )


def _otlp(data: Mapping[str, Any], source: str) -> list[Exchange]:
    found = []
    for resource in data.get("resourceSpans") or []:
        for scope in (resource or {}).get("scopeSpans") or []:
            for span in (scope or {}).get("spans") or []:
                exchange = _span(span, source)
                if exchange is not None:
                    found.append(exchange)
    return found


def _span(span: Mapping[str, Any], source: str) -> Exchange | None:
    attrs = {a.get("key"): _any_value(a.get("value") or {}) for a in span.get("attributes") or []}
    if not any(isinstance(k, str) and k.startswith("gen_ai.") for k in attrs):
        return None
    messages: list[dict[str, Any]] = []
    answer = ""
    system = attrs.get("gen_ai.system_instructions")
    if system:
        messages.append({"role": "system", "content": _parts_text(_json(system))})
    if "gen_ai.input.messages" in attrs:
        for m in _json(attrs["gen_ai.input.messages"]) or []:
            messages.append({"role": m.get("role"), "content": _parts_text(m)})
        outputs = _json(attrs.get("gen_ai.output.messages")) or []
        answer = _parts_text(outputs[0]) if outputs else ""
    elif any(str(k).startswith("gen_ai.prompt.") for k in attrs):
        index = 0
        while f"gen_ai.prompt.{index}.role" in attrs or f"gen_ai.prompt.{index}.content" in attrs:
            messages.append(
                {
                    "role": attrs.get(f"gen_ai.prompt.{index}.role", "user"),
                    "content": str(attrs.get(f"gen_ai.prompt.{index}.content", "")),
                }
            )
            index += 1
        answer = str(attrs.get("gen_ai.completion.0.content", ""))
    else:
        for event in span.get("events") or []:
            body = {
                a.get("key"): _any_value(a.get("value") or {})
                for a in event.get("attributes") or []
            }
            name = str(event.get("name", ""))
            content = body.get("content") or body.get("gen_ai.event.content") or ""
            if name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message"):
                role = name.split(".")[1]
                messages.append({"role": role, "content": _parts_text(_json(content) or content)})
            elif name == "gen_ai.content.prompt":  # the first GenAI events: the whole prompt
                for m in _json(body.get("gen_ai.prompt")) or []:
                    messages.append({"role": m.get("role"), "content": _parts_text(m)})
            elif name == "gen_ai.content.completion":
                outputs = _json(body.get("gen_ai.completion")) or []
                answer = _parts_text(outputs[0]) if outputs else ""
            elif name == "gen_ai.choice":
                parsed = _json(content)
                answer = _parts_text(
                    parsed.get("message", parsed) if isinstance(parsed, Mapping) else content
                )
    if not messages:
        return None
    start = span.get("startTimeUnixNano")
    return Exchange(
        format="otlp",
        messages=messages,
        answer=answer,
        source=source,
        trace_id=_text(span.get("traceId")),
        timestamp=_when(int(start) / 1e9) if start else None,
        model=_text(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")),
    )


def _any_value(value: Mapping[str, Any]) -> Any:
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return value[key]
    if "arrayValue" in value:
        return [_any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        entries = value["kvlistValue"].get("values", [])
        return {e.get("key"): _any_value(e.get("value") or {}) for e in entries}
    return None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _parts_text(message: Any) -> str:
    """The text of a message in the GenAI `parts` form, the OpenAI form, or plain text."""
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        return "".join(_parts_text(p) for p in message)
    if not isinstance(message, Mapping):
        return ""
    if isinstance(message.get("parts"), list):
        return "".join(
            str(p.get("content", ""))
            for p in message["parts"]
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    if message.get("type") == "text":
        return str(message.get("content", message.get("text", "")))
    content = message.get("content")
    return content if isinstance(content, str) else _parts_text(content) if content else ""


def _vars(metadata: Any) -> dict[str, str]:
    if not isinstance(metadata, Mapping):
        return {}
    return {str(k): str(v) for k, v in metadata.items() if isinstance(v, (str, int, float))}


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _when(seconds: Any) -> str | None:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return None
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
