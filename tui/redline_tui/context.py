"""What every screen shares: the store, the repository root, the config and the clock."""

from __future__ import annotations

import datetime as dt
import getpass
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from redline.baseline import Baseline, load_baseline
from redline.config import Config
from redline.records import CaseRecord, RunKind, RunRecord, RunResult, SampleRecord
from redline.store import RunStore

if TYPE_CHECKING:
    from redline_tui.cause_jobs import CauseJobs

#: Where committed baselines live, relative to the config root.
BASELINE_DIR = "baselines"


def _today() -> dt.date:
    return dt.date.today()


def _user() -> str:
    """Who is triaging, for `retired: {by}`: the login name, editable in the dialog."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@dataclass
class TriageContext:
    """The engine handles a triage session works with; `today` and `user` are injectable."""

    store: RunStore
    root: Path
    config: Config | None = None
    today: Callable[[], dt.date] = _today
    user: str = field(default_factory=_user)
    #: The app's background cause analyses (set by the app; survive every screen).
    jobs: CauseJobs | None = field(default=None, repr=False)
    _baselines: dict[str, Baseline | None] = field(default_factory=dict, repr=False)

    @property
    def baseline_dir(self) -> Path:
        return self.root / BASELINE_DIR

    def baseline(self, suite: str) -> Baseline | None:
        if suite not in self._baselines:
            self._baselines[suite] = load_baseline(self.baseline_dir, suite)
        return self._baselines[suite]

    def forget_baselines(self) -> None:
        self._baselines.clear()

    def golden(self, suite: str, case_id: str) -> str | None:
        baseline = self.baseline(suite)
        return None if baseline is None else baseline.golden(case_id)

    def no_golden_reason(self, suite: str, case_id: str) -> str:
        """Why a case has no golden output to diff against."""
        baseline = self.baseline(suite)
        case = None if baseline is None else baseline.cases.get(case_id)
        if case is None:
            return "No golden output: no accepted baseline for this case yet (a accepts one)."
        return (
            f"No golden output: the accepted baseline (run {case.run_id}, "
            f"{case.passes}/{case.samples} passed) has no passing sample to keep "
            "(a accepts a newer run)."
        )

    def default_run(self) -> RunRecord | None:
        """The latest red run, else the latest run of any result."""
        red = self.store.latest_run(kind=RunKind.RUN, result=RunResult.RED)
        return red or self.store.latest_run(kind=RunKind.RUN)

    def samples(self, run_id: str, case: CaseRecord) -> list[SampleRecord]:
        return self.store.samples(run_id, case.case_id, case.suite)

    def reruns_of(self, run_id: str, case: CaseRecord) -> list[tuple[RunRecord, CaseRecord]]:
        """Reruns linked to `run_id` that hold this case, oldest first."""
        return [
            (run, rec)
            for run, rec in self.store.case_history(case.case_id, case.suite)
            if run.kind is RunKind.RERUN and run.parent_id == run_id
        ]


#: How the Outputs screen names the samples of each arm of a cause analysis.
ARM_LABELS = {
    "reference-prompt": "ref prompt",
    "reference-model": "ref model",
    "red-configuration": "yours again",
}


def rerun_label(run: RunRecord) -> str:
    """`ref prompt 1a2b3c` for an arm of a cause analysis, `rerun 1a2b3c` otherwise."""
    arm = ARM_LABELS.get(str(run.args.get("arm", "")), "rerun")
    return f"{arm} {run.id[:6]}"
