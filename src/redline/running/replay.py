"""Answers from an earlier run's stored samples: re-score outputs without calling any model.

The cheap way to check an assertion change: the same raw outputs, judged by the current
assertions, stored as a new `replay` run linked to the run it replays.
"""

from __future__ import annotations

from redline.running.store import RunStore
from redline.vocabulary.completion import ChatRequest, Completion
from redline.vocabulary.records import SampleRecord, step_completion


class ReplayProvider:
    """The stored samples of one run, served by the (suite, case id, sample index) a
    request draws: a `Provider` like any model, that calls none."""

    max_parallel: int | None = None

    def __init__(self, store: RunStore, run_id: str) -> None:
        parent = store.run(run_id)
        self.parent_id = parent.id
        self._model_id = parent.model_id
        self._samples: dict[tuple[str, str, int], SampleRecord] = {}
        for s in store.samples(parent.id):
            self._samples[(s.suite, s.case_id, s.index)] = s

    def identity(self) -> str:
        """The replayed run's pinned model: the outputs are that model's."""
        return self._model_id

    async def complete(self, request: ChatRequest) -> Completion:
        """The stored answer to the sample the request draws; a transport error for a
        sample the replayed run does not hold."""
        if request.sample is None or request.sample not in self._samples:
            return Completion(
                text="",
                finish_reason=None,
                error=f"run {self.parent_id} holds no sample {request.sample}",
            )
        if request.step == 0 and not self._samples[request.sample].steps:
            return self.stored(*request.sample)
        return self.stored_step(request.sample, request.step)

    async def aclose(self) -> None:
        """Nothing to close: the samples were read when the replay started."""

    def stored(self, suite: str, case_id: str, index: int) -> Completion:
        """The stored sample as the completion it was, raw output untouched."""
        return self._samples[(suite, case_id, index)].as_answer()

    def stored_step(self, sample: tuple[str, str, int], step: int) -> Completion:
        """One request of a stored tool loop as the completion it was; a transport error
        when the replayed run's loop ended before it (its fixtures have changed since)."""
        steps = self._samples[sample].steps
        if step >= len(steps):
            return Completion(
                text="",
                finish_reason=None,
                error=f"run {self.parent_id} holds {len(steps)} loop steps of sample "
                f"{sample}, not step {step + 1}: the case's tool fixtures changed since",
            )
        return step_completion(steps[step])
