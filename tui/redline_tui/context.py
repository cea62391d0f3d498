"""What every screen shares: the store, the repository root, the config and the clock."""

from __future__ import annotations

import datetime as dt
import getpass
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from redline.config import Config
from redline.deciding.baseline import Baseline, GoldenReference, golden_reference, load_baseline
from redline.deciding.rerun import find_case
from redline.errors import RedlineError
from redline.running.store import RunStore
from redline.vocabulary.messages import Message
from redline.vocabulary.records import CaseRecord, RunKind, RunRecord, SampleRecord

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
    _case_goldens: dict[tuple[str, str], str | None] = field(default_factory=dict, repr=False)
    _conversations: dict[tuple[str, str], tuple[Message, ...]] = field(
        default_factory=dict, repr=False
    )

    @property
    def baseline_dir(self) -> Path:
        return self.root / BASELINE_DIR

    def baseline(self, suite: str) -> Baseline | None:
        if suite not in self._baselines:
            self._baselines[suite] = load_baseline(self.baseline_dir, suite)
        return self._baselines[suite]

    def forget_baselines(self) -> None:
        """Baselines or case files changed on disk: read them again when next asked."""
        self._baselines.clear()
        self._case_goldens.clear()
        self._conversations.clear()

    def golden(self, suite: str, case_id: str) -> GoldenReference:
        """What Step 2 diffs against: the accepted baseline's golden, else the case's own."""
        return golden_reference(self.baseline(suite), case_id, self.case_golden(suite, case_id))

    def case_golden(self, suite: str, case_id: str) -> str | None:
        """The case file's `golden:` answer as the files say now (None when it has none)."""
        key = (suite, case_id)
        if key not in self._case_goldens:
            golden = None
            if self.config is not None:
                try:
                    golden = find_case(self.config, suite, case_id)[1].golden
                except RedlineError:
                    golden = None
            self._case_goldens[key] = golden
        return self._case_goldens[key]

    def conversation(self, suite: str, case_id: str) -> tuple[Message, ...]:
        """The messages the case sends as its files say now (empty when it cannot be read)."""
        key = (suite, case_id)
        if key not in self._conversations:
            sent: tuple[Message, ...] = ()
            if self.config is not None:
                try:
                    found, case = find_case(self.config, suite, case_id)
                    sent = found.conversation(case)
                except RedlineError:
                    sent = ()
            self._conversations[key] = sent
        return self._conversations[key]

    def default_run(self) -> RunRecord | None:
        """The latest run (not a rerun): the one a morning's triage starts from."""
        return self.store.latest_run(kind=RunKind.RUN)

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
