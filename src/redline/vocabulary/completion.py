"""What a provider is asked and what it answers, independent of any vendor API."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from redline.vocabulary.messages import (
    FinishReason,
    Message,
    ResponseFormat,
    Role,
    Step,
    ToolCall,
    ToolChoice,
    ToolDefinition,
)

#: `Completion.extra` key naming the batch that answered (`redline run --batch`).
BATCH_KEY = "batch"
#: Prompt-length estimate: UTF-8 bytes per token (about 4 for English text; CJK counts more).
BYTES_PER_TOKEN = 4
#: Output bound when a suite sets no max_tokens (the Anthropic provider's default).
UNSET_MAX_TOKENS = 1024


@dataclass(frozen=True)
class ChatRequest:
    """One request: the rendered prompts, the conversation, tools and sampling settings.

    A one-turn request is `system` and `user`. A conversation gives `messages` (which
    then replace `user`; `system`, when set, goes first): the model answers the last turn.
    """

    model: str
    system: str
    user: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    response_format: ResponseFormat | None = None
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice | None = None
    #: (suite, case id, sample index) this request draws: how a provider answering from
    #: stored evidence (a replay) finds the answer. Model providers ignore it.
    sample: tuple[str, str, int] | None = None
    #: The request's place in its sample's tool loop (0: the first request).
    step: int = 0
    #: The case's vars (what a target, the team's own code, is called with).
    vars: Mapping[str, str] = field(default_factory=dict)
    #: Asked during generation with the output so far (cut off, finish reason `length`):
    #: why the sample's verdict can no longer change, or None while it still can. A
    #: provider that streams stops generating once it answers; others ignore it.
    settled: Callable[[Completion], str | None] | None = field(
        default=None, compare=False, repr=False
    )

    def conversation(self) -> tuple[Message, ...]:
        """Every message sent, in order: the system prompt, then the turns."""
        head = (Message(Role.SYSTEM, self.system),) if self.system else ()
        turns = self.messages or (Message(Role.USER, self.user),)
        return head + turns


class Refusal(StrEnum):
    """What a failed answer says about every later request of the provider: each would
    fail the same way, so a run that meets one on its first requests stops there."""

    #: The provider refused the credentials (HTTP 401/403).
    CREDENTIALS = "credentials"
    #: The provider refused the account, not the request: its quota or credit is spent
    #: (OpenAI's `insufficient_quota`, Anthropic's credit balance).
    ACCOUNT = "account"
    #: The provider serves no model of the pinned id (OpenAI's `model_not_found`).
    MODEL = "model"
    #: Nothing answered at the model endpoint as the API would (connection refused, DNS,
    #: TLS, a proxy refusing its credentials, HTTP 404/405, a redirect, a 2xx body that is
    #: not JSON) and it never answered before: the base_url is wrong or down.
    ENDPOINT = "endpoint"


@dataclass(frozen=True)
class Completion:
    """One sample's answer, or the transport error that prevented it.

    `text` is the raw output exactly as received. When `error` is set the
    request failed after all retries and the sample's verdict is `transport`.
    """

    text: str
    finish_reason: FinishReason | None
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost: float | None = None
    error: str | None = None
    attempts: int = 1
    extra: dict[str, object] = field(default_factory=dict)
    #: Why no later request of the provider will fare better (never retried); None: this
    #: request's own failure, or no failure.
    refusal: Refusal | None = None
    #: Why redline stopped generating before the model finished (the failure that settled
    #: the verdict); None when the model finished or ran out of tokens by itself. The text
    #: is what was generated up to the stop and `finish_reason` is `length`.
    stopped_early: str | None = None
    #: What the provider says about the build that answered: OpenAI's `system_fingerprint`
    #: and the server's version header. A change in them (or in `model`) is drift evidence.
    system_fingerprint: str | None = None
    server_version: str | None = None
    #: Of `input_tokens`, how many the provider read from its prompt cache and how many
    #: it wrote to it (each priced apart); None when the provider did not say.
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None

    #: The function calls the model asked for, exactly as received.
    tool_calls: tuple[ToolCall, ...] = ()
    #: Every request of a tool loop, in order, when the sample was one (the fields above
    #: are then the last step's answer with the loop's total tokens, latency and cost).
    steps: tuple[Step, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


__all__ = ["BYTES_PER_TOKEN", "UNSET_MAX_TOKENS", "ChatRequest", "Completion", "FinishReason"]
