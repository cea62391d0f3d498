"""Typed messages the screens send to the app, which owns navigation between them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from textual.message import Message

from redline.deciding.cause import CauseProgress, Diagnosis
from redline.vocabulary.causes import TriageState
from redline.vocabulary.records import CaseRecord, RunRecord

#: (run id, suite, case id): one case of one run, as triage tracks it.
CaseKey = tuple[str, str, str]


class Step(IntEnum):
    """Red is a question, answered in order: rerun on the unchanged prompt, read the
    outputs, read the history."""

    RERUN = 1
    OUTPUTS = 2
    HISTORY = 3


@dataclass(frozen=True)
class SampleSource:
    """A run whose samples the Outputs screen lists, with the label shown beside them."""

    label: str
    run_id: str


class OpenStep(Message):
    """Open one triage step for a case of a run."""

    def __init__(
        self,
        step: Step,
        run: RunRecord,
        case: CaseRecord,
        sources: Sequence[SampleSource] | None = None,
        sample: int | None = None,
    ) -> None:
        super().__init__()
        #: For Outputs: the sample (of the first source) to open on.
        self.sample = sample
        self.step = step
        self.run = run
        self.case = case
        self.sources = tuple(sources) if sources is not None else None


class FilesStaged(Message):
    """An action wrote and staged files; views showing case files or baselines refresh."""

    def __init__(self, paths: Sequence[str], commit_message: str) -> None:
        super().__init__()
        self.paths = tuple(paths)
        self.commit_message = commit_message


class CauseProgressed(Message):
    """A background cause analysis drew more samples (or stored its conclusion)."""

    def __init__(
        self,
        key: CaseKey,
        progress: CauseProgress | None = None,
        diagnosis: Diagnosis | None = None,
        error: str | None = None,
    ) -> None:
        super().__init__()
        self.key = key
        self.progress = progress
        self.diagnosis = diagnosis
        self.error = error

    @property
    def finished(self) -> bool:
        return self.diagnosis is not None or self.error is not None


class TriageMarked(Message):
    """A case's triage state changed by an action (retired, accepted)."""

    def __init__(self, key: CaseKey, state: TriageState) -> None:
        super().__init__()
        self.key = key
        self.state = state


class RetryProgressed(Message):
    """A retry of a run's infrastructure failures moved on (None: nothing to show)."""

    def __init__(self, message: str | None) -> None:
        super().__init__()
        self.message = message
