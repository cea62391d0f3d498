"""Typed messages the screens send to the app, which owns navigation between them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from textual.message import Message

from redline.records import CaseRecord, RunRecord


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
    ) -> None:
        super().__init__()
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


class RerunStored(Message):
    """A rerun finished and is in the store, linked to its parent run."""

    def __init__(self, run_id: str, parent_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.parent_id = parent_id
