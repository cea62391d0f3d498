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
from redline.errors import CredentialsRejected
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


def _rejected_hint(error: str) -> str:
    return f"{error}. Fix the key (see `api_key_env` in the configuration), then run again"


class SamplePipeline:
    """Draws samples for one run (or one pytest session) from one provider.

    `judges` fills in the `judge` assertions (`--judge`); without it they stay skipped.
    `rejected` words the error raised when the provider refuses the key before it ever
    answered: every later request would be refused too, so drawing stops there.
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
        rejected: Callable[[str], str] = _rejected_hint,
        stop_when_settled: bool = True,
    ) -> None:
        self.provider = provider
        self.run_id = run_id
        self.model_name = model_name
        self.judges = judges
        self.redactor = redactor or KeyRedactor()
        self.rejected = rejected
        self.stop_when_settled = stop_when_settled
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
        if completion.credentials_rejected and not self.answered:
            raise CredentialsRejected(self.rejected(completion.error or "credentials refused"))
        if completion.ok:
            self.answered = True
        return completion

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


__all__ = ["SampleJob", "SamplePipeline", "costly"]
