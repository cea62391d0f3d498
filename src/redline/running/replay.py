"""Answers from an earlier run's stored samples: re-score outputs without calling any model.

The cheap way to check an assertion change: the same raw outputs, judged by the current
assertions, stored as a new `replay` run linked to the run it replays.
"""

from __future__ import annotations

from redline.running.store import RunStore
from redline.vocabulary.completion import ChatRequest, Completion
from redline.vocabulary.records import SampleRecord


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
        return self.stored(*request.sample)

    async def aclose(self) -> None:
        """Nothing to close: the samples were read when the replay started."""

    def stored(self, suite: str, case_id: str, index: int) -> Completion:
        """The stored sample as the completion it was, raw output untouched."""
        return self._samples[(suite, case_id, index)].as_answer()
