"""One sample from request to evidence: ask, check, judge, decide, record.

`redline run` and `pytest cases/` draw every sample through `SamplePipeline`, so a case
collected by pytest is checked exactly as a run checks it: the same request, the same
assertions (judges included when judging is on), the same verdict, the same redaction
of API keys. What answers the request is any `Provider`: a model, or a stored run that
a replay re-scores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from redline.assertions import LAYER_1, SampleEvaluation, evaluate_sample, settled_failure
from redline.errors import CredentialsRejected, EndpointUnreachable
from redline.redaction import KeyRedactor
from redline.running.store import now_iso
from redline.vocabulary.completion import ChatRequest, Completion
from redline.vocabulary.records import SampleRecord

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
    When the provider refuses the key, or nothing answers at its endpoint, before it ever
    answered, every later request would fail too: drawing stops there
    (`CredentialsRejected`, `EndpointUnreachable`). When it dies mid-run (every sample of
    the last `BREAKER_FAILURES` failed in transport), one probe follows a pause; if it
    fails too, `down` says why and every worker stops (`ProviderDown`).
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
    ) -> None:
        self.provider = provider
        self.run_id = run_id
        self.model_name = model_name
        self.judges = judges
        self.redactor = redactor or KeyRedactor()
        self.stop_when_settled = stop_when_settled
        self.probe_pause_s = probe_pause_s
        #: Samples in a row that failed in transport (the circuit breaker's count).
        self.failing = 0
        #: Why the circuit breaker stopped the run; None while the provider answers.
        self.down: str | None = None
        self._probing = asyncio.Lock()
        #: Each case's settled check, built once (not for every sample it draws).
        self._settled: dict[tuple[str, str], Callable[[Completion], str | None] | None] = {}
        #: The provider has answered at least once (so its key works).
        self.answered = False

    async def draw(self, job: SampleJob) -> SampleRecord:
        """The sample's record: its raw output, every assertion's result, its verdict."""
        completion = await self.ask(job)
        evaluation = await self.check(job, completion)
        return self.redactor.sample(self.record(job, completion, evaluation))

    def request(self, job: SampleJob) -> ChatRequest:
        system, user = job.suite.render(job.case)
        return ChatRequest(
            model=self.model_name,
            system=system,
            user=user,
            max_tokens=job.suite.max_tokens,
            temperature=job.suite.temperature,
            seed=job.seed,
            sample=(job.case.suite, job.case.id, job.index),
            settled=self._settled_check(job),
        )

    def _settled_check(self, job: SampleJob) -> Callable[[Completion], str | None] | None:
        if not self.stop_when_settled:
            return None
        key = (job.case.suite, job.case.id)
        if key not in self._settled:
            self._settled[key] = settled_failure(job.case)
        return self._settled[key]

    async def ask(self, job: SampleJob) -> Completion:
        completion = await self.provider.complete(self.request(job))
        if not self.answered:
            if completion.credentials_rejected:
                raise CredentialsRejected(completion.error or "credentials refused")
            if completion.endpoint_unreachable:
                raise EndpointUnreachable(completion.error or "the endpoint did not answer")
        if completion.ok:
            self.answered = True
            self.failing = 0
            return completion
        self.failing += 1
        if self.failing < BREAKER_FAILURES and self.down is None:
            return completion
        return await self._probe(job, completion)

    async def _probe(self, job: SampleJob, failed: Completion) -> Completion:
        """One request after a pause, by one worker while the others wait for its outcome."""
        async with self._probing:
            if self.down is not None:
                raise ProviderDown(self.down)
            if self.failing < BREAKER_FAILURES:
                return failed  # a probe or a sample answered meanwhile
            await asyncio.sleep(self.probe_pause_s)
            probe = await self.provider.complete(self.request(job))
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


__all__ = ["BREAKER_FAILURES", "ProviderDown", "SampleJob", "SamplePipeline", "costly"]
