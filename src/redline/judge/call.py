"""One judge call: rubric + output in, a validated judgement (or `malformed`) out."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from redline.config import Config, ModelRef
from redline.judge.answer import (
    Judgement,
    JudgeStatus,
    answer_schema,
    judge_system_prompt,
    judge_user_prompt,
    read_answer,
)
from redline.judge.rubric import Rubric
from redline.providers.anthropic import AnthropicProvider
from redline.providers.base import Provider
from redline.providers.factory import make_provider
from redline.vocabulary.completion import ChatRequest, FinishReason
from redline.vocabulary.messages import ResponseFormat

#: The tool an Anthropic judge is forced to call; its input is the answer object.
JUDGE_TOOL = "record_judgement"


def judge_request(
    rubric: Rubric,
    model: ModelRef,
    output: str,
    variables: Mapping[str, str],
    seed: int | None = None,
) -> ChatRequest:
    """The structured-output request asking `model` to judge `output` by `rubric`."""
    return ChatRequest(
        model=model.name,
        system=judge_system_prompt(rubric),
        user=judge_user_prompt(rubric, output, variables),
        max_tokens=rubric.max_tokens,
        temperature=rubric.temperature,
        seed=seed,
        response_format=ResponseFormat(answer_schema(rubric), name=JUDGE_TOOL),
    )


async def judge_output(
    provider: Provider,
    rubric: Rubric,
    model: ModelRef,
    output: str,
    variables: Mapping[str, str],
    seed: int | None = None,
) -> Judgement:
    """Ask the judge; a failed call is `error`, an unusable answer `malformed`."""
    completion = await provider.complete(judge_request(rubric, model, output, variables, seed))
    if completion.error is not None:
        return Judgement(
            JudgeStatus.ERROR,
            None,
            "",
            problem=f"judge call failed: {completion.error}",
            latency_ms=completion.latency_ms,
            cost=completion.cost,
        )
    judgement = read_answer(rubric, completion.text)
    if judgement.status is JudgeStatus.MALFORMED and completion.finish_reason is (
        FinishReason.LENGTH
    ):
        judgement = dataclasses.replace(
            judgement,
            problem=f"{judgement.problem}; the answer was cut at max_tokens "
            f"{rubric.max_tokens} (raise it in the rubric)",
        )
    return dataclasses.replace(judgement, latency_ms=completion.latency_ms, cost=completion.cost)


def judge_provider(
    model: ModelRef, config: Config, env: Mapping[str, str] | None = None
) -> Provider:
    """The provider for a judge model, able to answer with structured output.

    OpenAI-compatible servers get `response_format: json_schema` and the local
    model JSON-schema-constrained sampling from the providers themselves; an
    Anthropic judge is made to call one tool whose input schema is the answer.
    """
    provider = make_provider(model, config, env)
    if isinstance(provider, AnthropicProvider):
        return ToolCallAnthropicProvider.from_provider(provider)
    return provider


class ToolCallAnthropicProvider(AnthropicProvider):
    """An Anthropic judge: the Messages provider, whose response format is a forced tool
    call (named JUDGE_TOOL by `judge_request`)."""

    @classmethod
    def from_provider(cls, base: AnthropicProvider) -> ToolCallAnthropicProvider:
        return cls(
            base.model,
            base.config,
            base_url=base.base_url,
            api_key=base._api_key,
            price=base._price,
        )
