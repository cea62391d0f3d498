"""What a request may hold besides one system and one user text: a conversation, tools,
a structured-output schema, images; and the fixtures and results of a tool loop.

These are vendor-neutral (the OpenAI chat shape, which most transcripts are in); each
provider turns them into its own wire format. Tool calls are kept exactly as received:
`ToolCall.arguments` is the raw arguments text, parsed only when a check reads it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class FinishReason(StrEnum):
    """Why generation stopped, normalised across providers."""

    STOP = "stop"
    LENGTH = "length"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    TOOL_CALLS = "tool_calls"
    OTHER = "other"


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True)
class TextPart:
    """A piece of text in a message whose content has several parts."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image in a user message: its bytes, sent inline (a data URL, a base64 block)."""

    media_type: str
    data: bytes = field(repr=False)
    #: The file it was read from, as the case file names it (for messages and display).
    source: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"


Part = TextPart | ImagePart


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for, exactly as received."""

    id: str
    name: str
    #: The arguments text as the provider sent it (OpenAI: a JSON string; Anthropic: the
    #: `input` object serialised once, compactly, in the order received).
    arguments: str

    def parsed(self) -> tuple[Any, str | None]:
        """(the arguments as JSON, None) or (None, why they are not a JSON object)."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError) as exc:
            return None, f"arguments are not JSON ({exc})"
        if not isinstance(value, dict):
            return None, f"arguments are JSON but not an object ({type(value).__name__})"
        return value, None


@dataclass(frozen=True)
class Message:
    """One turn of a conversation, as a transcript in the OpenAI chat format writes it."""

    role: Role
    #: Text, or parts (text and images) for a user message with images.
    content: str | tuple[Part, ...] = ""
    name: str | None = None
    #: The calls an assistant turn made.
    tool_calls: tuple[ToolCall, ...] = ()
    #: The call a `tool` message answers.
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        """The message's text parts joined (images left out)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, ImagePart))


@dataclass(frozen=True)
class ToolDefinition:
    """A function the model may call: an OpenAI-style function definition."""

    name: str
    #: A JSON Schema of the arguments object.
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    description: str = ""
    strict: bool | None = None


class ToolChoiceMode(StrEnum):
    AUTO = "auto"
    NONE = "none"
    REQUIRED = "required"
    FUNCTION = "function"


@dataclass(frozen=True)
class ToolChoice:
    """Whether the model may, must or must not call a tool, or must call one named function."""

    mode: ToolChoiceMode = ToolChoiceMode.AUTO
    #: The function it must call (mode `function`).
    name: str | None = None


@dataclass(frozen=True)
class ResponseFormat:
    """Structured output: the answer must be JSON valid against `schema`."""

    schema: Mapping[str, Any]
    name: str = "response"
    strict: bool = False


@dataclass(frozen=True)
class ToolFixture:
    """A case's offline answer for a tool: used for a call of `name` whose arguments hold
    every key of `match` with that value (any call of `name` when `match` is None)."""

    name: str
    content: str
    match: Mapping[str, Any] | None = None

    def answers(self, call: ToolCall) -> bool:
        if call.name != self.name:
            return False
        if self.match is None:
            return True
        args, _ = call.parsed()
        return isinstance(args, dict) and all(
            k in args and args[k] == v for k, v in self.match.items()
        )


@dataclass(frozen=True)
class ToolResult:
    """The answer a tool loop gave to one call (from the case's fixtures)."""

    call_id: str
    name: str
    content: str


class LoopEnd(StrEnum):
    """How a tool loop ended: each is a different thing the model did."""

    #: The model gave a final answer (no tool call).
    ANSWERED = "answered"
    #: The model called a tool the case has no fixture answer for: the loop cannot go on.
    UNANSWERED = "unanswered-call"
    #: The model was still calling tools after the case's `max_steps` requests.
    MAX_STEPS = "max-steps"


@dataclass(frozen=True)
class Step:
    """One request of a tool loop and what came back: kept for every step of a sample."""

    #: The raw output text of this step, exactly as received.
    output: str
    finish_reason: FinishReason | None
    tool_calls: tuple[ToolCall, ...] = ()
    #: The fixture answers sent back for this step's calls (none on the last step).
    tool_results: tuple[ToolResult, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost: float | None = None
    #: The transport error that ended the loop at this step.
    error: str | None = None


def loop_end(steps: tuple[Step, ...]) -> LoopEnd | None:
    """How a stored tool loop ended, read from its steps (None: no loop, or a transport
    error ended it)."""
    if not steps or steps[-1].error is not None:
        return None
    last = steps[-1]
    if not last.tool_calls:
        return LoopEnd.ANSWERED
    return LoopEnd.MAX_STEPS if last.tool_results else LoopEnd.UNANSWERED


__all__ = [
    "FinishReason",
    "ImagePart",
    "LoopEnd",
    "Message",
    "Part",
    "ResponseFormat",
    "Role",
    "Step",
    "TextPart",
    "ToolCall",
    "ToolChoice",
    "ToolChoiceMode",
    "ToolDefinition",
    "ToolFixture",
    "ToolResult",
    "loop_end",
]
