"""`target: {python: package.module:function}`: the function, called in worker processes."""

from __future__ import annotations

import os
import time

from redline.config import ModelRef
from redline.targets.answer import BadAnswer, case_payload, failure, read_answer
from redline.targets.base import TargetProvider
from redline.targets.pool import WorkerPool, WorkerSetup
from redline.targets.spec import TargetSpec, resolve_env
from redline.vocabulary.completion import ChatRequest, Completion


class PythonTarget(TargetProvider):
    """Calls `function(case)` (sync or async) in a pool of `workers` processes; an
    exception is a `transport` sample with its traceback kept as evidence."""

    def __init__(self, spec: TargetSpec, model: ModelRef | None, workers: int) -> None:
        super().__init__(spec, model)
        env = {k: resolve_env(v, os.environ)[0] for k, v in spec.env.items()}
        setup = WorkerSetup(str(spec.root), spec.ref, spec.max_memory_mb, env)
        self.max_parallel = workers
        self.pool = WorkerPool(setup, workers)

    async def complete(self, request: ChatRequest) -> Completion:
        payload = case_payload(request, self.model_name or None)
        started = time.perf_counter()
        outcome = await self.pool.call(payload, self.model_env(), self.spec.timeout_s)
        latency_ms = (time.perf_counter() - started) * 1000
        if not outcome.ok:
            evidence = outcome.evidence + (
                f"\n--- printed ---\n{outcome.output}" if outcome.output else ""
            )
            return failure(
                outcome.error, latency_ms=latency_ms, model=self.model_name, evidence=evidence
            )
        try:
            completion = read_answer(outcome.value, latency_ms=latency_ms, model=self.model_name)
        except BadAnswer as exc:
            return failure(
                str(exc),
                latency_ms=latency_ms,
                model=self.model_name,
                evidence=repr(outcome.value)[:2000],
            )
        if outcome.output:
            completion.extra["target_output"] = outcome.output
        return completion

    async def aclose(self) -> None:
        await self.pool.aclose()
