"""A conversation, an answer or tools given as Python data (an SDK message, a dict, a list)
rather than in a case file, read by the case file's own reader and rules.

Below the pytest API so that code reading a golden conversation (the baseline) does not
load every optional check the pytest API registers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.casemodel.conversation import ConversationReader
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.messages import Message, Role, ToolDefinition

#: What a check reads: an output text, the answer message of a chat API (a dict in the
#: OpenAI or Anthropic format, or an SDK message object) with its tool calls, a message list
#: (the conversation the app produced: its text is the last assistant turn's, its calls every
#: assistant turn's), or a redline Completion.
Output = str | Completion | Mapping[str, Any] | Sequence[Any] | Any


def answer_of(output: Output) -> Completion:
    """The answer a check sees in `output` (see `Output`); ValueError for a message list
    that is not one (an unknown role, a call without an id...)."""
    if isinstance(output, str):
        return Completion(text=output, finish_reason=FinishReason.STOP)
    if isinstance(output, Completion):
        return output
    items = [output] if isinstance(output, Mapping) or hasattr(output, "role") else output
    messages = [m if isinstance(m, Mapping) else _plain_message(m) for m in items]
    if messages and "role" not in messages[-1]:
        messages[-1] = {"role": "assistant", **messages[-1]}
    turns = read_python("messages", messages).messages
    answers = [m for m in turns if m.role is Role.ASSISTANT]
    last = turns[-1] if turns else None
    calls = tuple(c for m in answers for c in m.tool_calls)
    text = last.text if last is not None and last.role is Role.ASSISTANT else ""
    finish = FinishReason.TOOL_CALLS if last is not None and last.tool_calls else FinishReason.STOP
    return Completion(text=text, finish_reason=finish, tool_calls=calls)


def _plain_message(message: Any) -> Mapping[str, Any]:
    """An SDK message object (pydantic `model_dump`, or plain attributes) as a dict."""
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        data = dump(exclude_none=True)
        if isinstance(data, Mapping):
            return data
    keys = ("role", "content", "name", "tool_calls", "tool_call_id")
    return {k: getattr(message, k) for k in keys if getattr(message, k, None) is not None}


@dataclass(frozen=True)
class PythonData:
    """What `read_python` read: a conversation's messages, or tool definitions."""

    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()


def read_python(key: str, value: Any) -> PythonData:
    """`messages` or `tools` read exactly as a case file's are (the same reader, the same
    problems), from Python data; ValueError listing the problems."""
    found: list[str] = []

    def report(at: tuple[str | int, ...], message: str, hint: str) -> None:
        where = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in at)
        found.append(f"{where.lstrip('.')}: {message}" + (f" ({hint})" if hint else ""))

    reader = ConversationReader(report, Path.cwd().as_posix(), _file_bytes)
    read = (
        PythonData(messages=reader.messages(value, (key,)))
        if key == "messages"
        else PythonData(tools=reader.tools(value, (key,)))
    )
    if found:
        raise ValueError("; ".join(found))
    return read


def _file_bytes(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
