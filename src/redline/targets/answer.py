"""What a target is given (the case as JSON) and how its answer is read back.

One shape for every kind of target: a python function receives the dict, a command reads
it on stdin, an HTTP body template is filled from it. The answer is text, or a mapping
with the text and, optionally, tool calls, usage, cost, latency, finish reason and the
model id the app used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from redline.config import moves_under_you
from redline.vocabulary.completion import ChatRequest, Completion
from redline.vocabulary.messages import FinishReason, ToolCall

#: Keys an answer mapping may hold; anything else is kept in the sample's evidence.
TEXT_KEYS = ("text", "output", "answer", "content")
_FINISH = {f.value: f for f in FinishReason}


class BadAnswer(ValueError):
    """A target's return value that is not an answer (said in words, for the evidence)."""


def case_payload(request: ChatRequest, model: str | None) -> dict[str, Any]:
    """The case as the target sees it: vars, the conversation (OpenAI chat wire format),
    tools, the sample's index and seed, and the model it should use (None: its own)."""
    from redline.providers.openai import chat_body

    suite, case_id, index = request.sample or ("", "", 0)
    body = chat_body(request)
    return {
        "suite": suite,
        "case": case_id,
        "sample": index,
        "seed": request.seed,
        "vars": dict(request.vars),
        "messages": body.get("messages", []),
        "tools": body.get("tools", []),
        "model": model,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }


def read_answer(value: Any, *, latency_ms: float, model: str) -> Completion:
    """The completion a target's answer describes; BadAnswer when it describes none."""
    if isinstance(value, str):
        return Completion(
            text=value, finish_reason=FinishReason.STOP, model=model, latency_ms=latency_ms
        )
    if not isinstance(value, Mapping):
        raise BadAnswer(
            f"the target returned {type(value).__name__}; return text or a mapping with "
            f"one of {', '.join(TEXT_KEYS)}"
        )
    text_key = next((k for k in TEXT_KEYS if k in value), None)
    calls = tool_calls(value.get("tool_calls"))
    if text_key is None and not calls:
        raise BadAnswer(
            f"the target's answer has none of {', '.join(TEXT_KEYS)} nor tool_calls "
            f"(keys: {', '.join(sorted(map(str, value))) or 'none'})"
        )
    text = value.get(text_key) if text_key is not None else ""
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise BadAnswer(f"the answer's {text_key!r} is {type(text).__name__}, not text")
    raw_usage = value.get("usage")
    usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
    reason = value.get("finish_reason")
    finish = _FINISH.get(str(reason)) if reason is not None else None
    if finish is None:
        finish = FinishReason.TOOL_CALLS if calls and not text else FinishReason.STOP
    known = {*TEXT_KEYS, "tool_calls", "usage", "cost", "latency_ms", "model", "finish_reason"}
    extra = {str(k): v for k, v in value.items() if k not in known}
    reported = value.get("latency_ms")
    cost = value.get("cost")
    used = str(value.get("model") or model)
    if moves_under_you(used):
        raise BadAnswer(
            f"the target reports model {used!r}: aliases like 'latest' move under you, so "
            "its answers are no evidence of one model; have the app use and report a dated "
            "or versioned model id"
        )
    return Completion(
        text=text,
        finish_reason=finish,
        model=used,
        input_tokens=token_count(usage, "input_tokens", "prompt_tokens"),
        output_tokens=token_count(usage, "output_tokens", "completion_tokens"),
        latency_ms=float(reported) if isinstance(reported, (int, float)) else latency_ms,
        cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
        tool_calls=calls,
        extra={"target": extra} if extra else {},
    )


def tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    """Calls written as `{name, arguments}` or in the OpenAI `{function: {...}}` form;
    arguments as a JSON string or an object (serialised compactly, in order)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadAnswer(f"tool_calls is {type(raw).__name__}, not a list")
    calls = []
    for number, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            raise BadAnswer(f"tool_calls[{number}] is not a mapping")
        inner = entry.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else entry
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise BadAnswer(f"tool_calls[{number}] has no name")
        args = fn.get("arguments", fn.get("input", {}))
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        calls.append(
            ToolCall(id=str(entry.get("id") or f"call_{number}"), name=name, arguments=args)
        )
    return tuple(calls)


def token_count(usage: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def failure(error: str, *, latency_ms: float, model: str, evidence: str = "") -> Completion:
    """A `transport` sample: the target did not answer; `evidence` (a traceback, the
    command's stderr) is kept with the error, which the store records."""
    if evidence.strip():
        error = f"{error}\n{evidence.rstrip()}"
    return Completion(text="", finish_reason=None, model=model, latency_ms=latency_ms, error=error)
