"""One sample from request to evidence: ask, check, judge, decide, record.

`redline run` and `pytest cases/` draw every sample through `SamplePipeline`, so a case
collected by pytest is checked exactly as a run checks it: the same request, the same
assertions (judges included when judging is on), the same verdict, the same redaction
of API keys. What answers the request is any `Provider`: a model, or a stored run that
a replay re-scores.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from redline.assertions import LAYER_1, SampleEvaluation, evaluate_sample, settled_failure
from redline.errors import ConfigError
from redline.providers.base import REFUSAL_STOPS
from redline.redaction import KeyRedactor
from redline.running.store import now_iso
from redline.text.templates import is_jinja
from redline.vocabulary.completion import ChatRequest, Completion
from redline.vocabulary.messages import Message, Role, Step, TextPart, ToolResult
from redline.vocabulary.records import SampleRecord

T = TypeVar("T", int, float)

if TYPE_CHECKING:
    from redline.providers.base import Provider
    from redline.running.judging import JudgeSession
    from redline.suite.cases import Case, Suite


def costly(case: Case) -> bool:
    """Whether the case has assertions beyond Layer 1 (models, judges): those are
    evaluated off the event loop."""
    return any(a.layer > LAYER_1 for a in case.assertions)


@dataclass(frozen=True)
class SampleJob:
    """One sample to draw: the case, the sample's index in its run, and its seed."""

    suite: Suite
    case: Case
    index: int
    seed: int | None
    costly: bool = False


#: The circuit breaker: this many samples in a row failing in transport pause the run
#: for one probe request; when the probe fails too, drawing stops (`ProviderDown`).
BREAKER_FAILURES = 12
PROBE_PAUSE_S = 2.0


class ProviderDown(Exception):
    """The provider stopped answering mid-run: the circuit breaker's probe failed too."""


class SamplePipeline:
    """Draws samples for one run (or one pytest session) from one provider.

    `judges` fills in the `judge` assertions (`--judge`); without it they stay skipped.
    When the provider refuses the key, the account or the model, or nothing answers at its
    endpoint, before it ever answered, every later request would fail too: drawing stops
    there (`REFUSAL_STOPS`). When it dies mid-run (every sample of the last `BREAKER_FAILURES`
    failed in transport), one probe follows a pause; if it fails too, `down` says why and
    every worker stops (`ProviderDown`).
    `breaker` False turns the circuit breaker off (a batch answers all at once).
    `stop_when_settled` lets a provider that streams stop a sample once a failure no
    further text could undo has settled its verdict (the configuration's key of that name).
    """

    def __init__(
        self,
        provider: Provider,
        *,
        run_id: str,
        model_name: str,
        judges: JudgeSession | None = None,
        redactor: KeyRedactor | None = None,
        stop_when_settled: bool = True,
        probe_pause_s: float = PROBE_PAUSE_S,
        breaker: bool = True,
    ) -> None:
        self.provider = provider
        self.run_id = run_id
        self.model_name = model_name
        self.judges = judges
        self.redactor = redactor or KeyRedactor()
        self.stop_when_settled = stop_when_settled
        self.probe_pause_s = probe_pause_s
        self.breaker = breaker
        #: Samples in a row that failed in transport (the circuit breaker's count).
        self.failing = 0
        #: Why the circuit breaker stopped the run; None while the provider answers.
        self.down: str | None = None
        self._probing = asyncio.Lock()
        #: Each case's settled check, built once (not for every sample it draws).
        self._settled: dict[tuple[str, str], Callable[[Completion], str | None] | None] = {}
        #: The provider has answered at least once (so its key works).
        self.answered = False
        #: Each case's first request, when its prompts are filled without Jinja (so every
        #: sample's is the same but for its seed and index): rendered once, not per sample.
        self._requests: dict[tuple[str, str], ChatRequest] = {}

    async def draw(self, job: SampleJob) -> SampleRecord:
        """The sample's record: its raw output, every assertion's result, its verdict."""
        completion = await self.ask(job)
        evaluation = await self.check(job, completion)
        return self.redactor.sample(self.record(job, completion, evaluation))

    def request(self, job: SampleJob) -> ChatRequest:
        key = (job.case.suite, job.case.id)
        sample = (job.case.suite, job.case.id, job.index)
        first = self._requests.get(key)
        if first is not None:
            return dataclasses.replace(first, seed=job.seed, sample=sample)
        request = case_request(
            job.suite,
            job.case,
            self.model_name,
            seed=job.seed,
            sample=sample,
            settled=self._settled_check(job),
        )
        if _renders_alike(job.suite, job.case):
            self._requests[key] = request
        return request

    def _settled_check(self, job: SampleJob) -> Callable[[Completion], str | None] | None:
        if not self.stop_when_settled:
            return None
        key = (job.case.suite, job.case.id)
        if key not in self._settled:
            self._settled[key] = settled_failure(job.case)
        return self._settled[key]

    async def ask(self, job: SampleJob) -> Completion:
        """The sample's answer; for a case with tool fixtures, the whole tool loop."""
        request = self.request(job)
        if not job.case.plays_loop:
            return await self._complete(request)
        return await play_loop(self._complete, request, job.case)

    async def _complete(self, request: ChatRequest) -> Completion:
        """One request's answer, through the credentials check and the circuit breaker."""
        completion = await self.provider.complete(request)
        if not self.answered and completion.refusal is not None:
            raise REFUSAL_STOPS[completion.refusal](completion.error or str(completion.refusal))
        if completion.ok:
            self.answered = True
            self.failing = 0
            return completion
        self.failing += 1
        if not self.breaker or (self.failing < BREAKER_FAILURES and self.down is None):
            return completion
        return await self._probe(request, completion)

    async def _probe(self, request: ChatRequest, failed: Completion) -> Completion:
        """One request after a pause, by one worker while the others wait for its outcome."""
        async with self._probing:
            if self.down is not None:
                raise ProviderDown(self.down)
            if self.failing < BREAKER_FAILURES:
                return failed  # a probe or a sample answered meanwhile
            await asyncio.sleep(self.probe_pause_s)
            probe = await self.provider.complete(request)
            if probe.ok:
                self.failing = 0
                return probe
            self.down = (
                f"the provider stopped answering: the last {self.failing} samples all failed "
                f"in transport and a probe {self.probe_pause_s:g} s later failed too "
                f"({probe.error or failed.error})"
            )
            raise ProviderDown(self.down)

    async def check(self, job: SampleJob, completion: Completion) -> SampleEvaluation:
        """Every assertion of the case on the completion, judges last (docs/rules.md:
        Layer 1 before Layer 2)."""
        if job.costly:
            evaluation = await asyncio.to_thread(evaluate_sample, job.case, completion)
        else:
            evaluation = evaluate_sample(job.case, completion)
        if self.judges is None:
            return evaluation
        from redline.running.judging import judge_pending  # the judge stack loads only when judging

        return await judge_pending(self.judges, job.case, completion, evaluation, job.seed)

    def record(
        self, job: SampleJob, completion: Completion, evaluation: SampleEvaluation
    ) -> SampleRecord:
        return SampleRecord.of_answer(
            completion,
            run_id=self.run_id,
            suite=job.case.suite,
            case_id=job.case.id,
            index=job.index,
            verdict=evaluation.verdict,
            model=completion.model or self.model_name,
            seed=job.seed,
            assertions=evaluation.results,
            created_at=now_iso(),
        )


def case_request(
    suite: Suite,
    case: Case,
    model: str,
    *,
    seed: int | None = None,
    sample: tuple[str, str, int] | None = None,
    settled: Callable[[Completion], str | None] | None = None,
) -> ChatRequest:
    """The first request a case's sample sends."""
    system, user = suite.render(case)
    turns = suite.turns(case)
    return ChatRequest(
        model=model,
        system=system,
        user="" if turns else user,
        messages=turns,
        tools=suite.tools,
        tool_choice=suite.tool_choice,
        response_format=suite.response_format_for(case),
        max_tokens=suite.max_tokens,
        temperature=suite.temperature,
        seed=seed,
        sample=sample,
        settled=settled,
        vars=case.vars,
    )


def _renders_alike(suite: Suite, case: Case) -> bool:
    """Whether every sample of the case renders the same prompts: `{{var}}` placeholders
    only, no Jinja (a template may draw at random or include a file that changes)."""
    system, user = suite.template_names
    if is_jinja(suite.system_template, system) or is_jinja(suite.user_template, user):
        return False
    for message in suite.messages + case.messages:
        content = message.content
        texts = (
            [content]
            if isinstance(content, str)
            else [p.text for p in content if isinstance(p, TextPart)]
        )
        if any(is_jinja(text) for text in texts):
            return False
    return True


def refuse_unsupported(
    provider: Provider, chosen: Iterable[tuple[Suite, Case]], model: str
) -> None:
    """ConfigError, before any request, naming each case whose requests the provider cannot
    take (images for a text-only model...), with the provider and the model."""
    check = getattr(provider, "unsupported", None)
    if check is None:
        return
    problems = []
    for suite, case in chosen:
        why = check(case_request(suite, case, model))
        if why is not None:
            problems.append(
                f"{case.suite}/{case.id}: {why}. Pin a model that can take it for this suite, "
                "or leave the case out of the run (--case)"
            )
    if problems:
        raise ConfigError("\n".join(problems))


async def play_loop(
    complete: Callable[[ChatRequest], Awaitable[Completion]], request: ChatRequest, case: Case
) -> Completion:
    """Model → tool calls → the case's fixture answers → model … until a final answer, a
    call no fixture answers, or `max_steps` requests. Every step is kept; the completion
    is the last step's answer with the loop's total tokens, latency and cost."""
    turns = list(request.conversation()[1:] if request.system else request.conversation())
    steps: list[Step] = []
    completions: list[Completion] = []
    for number in range(case.max_steps):
        step_request = dataclasses.replace(request, user="", messages=tuple(turns), step=number)
        completion = await complete(step_request)
        completions.append(completion)
        results = _answers(completion, case) if completion.ok else None
        steps.append(_step(completion, results or ()))
        if results is None:
            break
        turns.append(Message(Role.ASSISTANT, completion.text, tool_calls=completion.tool_calls))
        turns.extend(Message(Role.TOOL, r.content, tool_call_id=r.call_id) for r in results)
    last = completions[-1]
    return dataclasses.replace(
        last,
        latency_ms=_total(c.latency_ms for c in completions),
        input_tokens=_total(c.input_tokens for c in completions),
        output_tokens=_total(c.output_tokens for c in completions),
        cost=_total(c.cost for c in completions),
        attempts=sum(c.attempts for c in completions),
        steps=tuple(steps),
    )


def _answers(completion: Completion, case: Case) -> tuple[ToolResult, ...] | None:
    """The fixture answer to each of the completion's calls; None when the loop ends here
    (no call, or a call no fixture answers)."""
    if not completion.tool_calls:
        return None
    results = []
    for call in completion.tool_calls:
        fixture = next((f for f in case.tool_results if f.answers(call)), None)
        if fixture is None:
            return None
        results.append(ToolResult(call.id, call.name, fixture.content))
    return tuple(results)


def _step(completion: Completion, results: tuple[ToolResult, ...]) -> Step:
    return Step(
        output=completion.text,
        finish_reason=completion.finish_reason,
        tool_calls=completion.tool_calls,
        tool_results=results,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        latency_ms=completion.latency_ms,
        cost=completion.cost,
        error=completion.error,
    )


def _total(values: Iterable[T | None]) -> T | None:
    """The sum, or None when any step did not say."""
    total: Any = 0
    for value in values:
        if value is None:
            return None
        total += value
    return cast(T, total)


__all__ = [
    "BREAKER_FAILURES",
    "ProviderDown",
    "SampleJob",
    "SamplePipeline",
    "case_request",
    "costly",
    "play_loop",
    "refuse_unsupported",
]
