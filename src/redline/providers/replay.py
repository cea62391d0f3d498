"""Answers from an earlier run's stored samples: re-score outputs without calling any model.

The cheap way to check an assertion change: the same raw outputs, judged by the current
assertions, stored as a new `replay` run linked to the run it replays.
"""

from __future__ import annotations

from redline.providers.completion import Completion
from redline.running.records import SampleRecord
from redline.running.store import RunStore


class ReplayProvider:
    """The stored samples of one run, served by (suite, case id, sample index)."""

    max_parallel: int | None = None

    def __init__(self, store: RunStore, run_id: str) -> None:
        parent = store.run(run_id)
        self.parent_id = parent.id
        self._model_id = parent.model_id
        self._samples: dict[tuple[str, str, int], SampleRecord] = {}
        self._seeds: dict[tuple[str, str], dict[int, int | None]] = {}
        for s in store.samples(parent.id):
            self._samples[(s.suite, s.case_id, s.index)] = s
            self._seeds.setdefault((s.suite, s.case_id), {})[s.index] = s.seed

    def identity(self) -> str:
        """The replayed run's pinned model: the outputs are that model's."""
        return self._model_id

    def seeds(self, suite: str, case_id: str) -> dict[int, int | None]:
        """Sample index → the seed it was generated with, for one case (empty if not run)."""
        return dict(self._seeds.get((suite, case_id), {}))

    def stored(self, suite: str, case_id: str, index: int) -> Completion:
        """The stored sample as the completion it was, raw output untouched."""
        return self._samples[(suite, case_id, index)].as_answer()
