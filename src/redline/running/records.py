"""What the store keeps: runs, case results and samples, as read back by every client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from redline.providers.completion import FinishReason
from redline.running.verdicts import AssertionResult, Verdict


class RunKind(StrEnum):
    RUN = "run"
    RERUN = "rerun"
    REPLAY = "replay"


class RunStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


class RunResult(StrEnum):
    GREEN = "green"
    RED = "red"
    INCONCLUSIVE = "inconclusive"


class CaseOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    #: Sequential sampling ran out of samples with the rate inside the margin of the bar.
    MARGINAL = "marginal"


@dataclass(frozen=True)
class RunRecord:
    id: str
    kind: RunKind
    status: RunStatus
    result: RunResult | None
    started_at: str
    finished_at: str | None
    model_id: str
    model_alias: str
    suites: tuple[str, ...]
    parent_id: str | None = None
    git_commit: str | None = None
    git_dirty: bool = False
    #: The branch checked out when the run started; None when detached or outside git.
    git_branch: str | None = None
    redline_version: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    manifest: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CaseRecord:
    run_id: str
    suite: str
    case_id: str
    tier: str
    model_id: str
    samples: int
    required: int
    passes: int
    result: CaseOutcome
    verdicts: Mapping[Verdict, int]
    case_hash: str

    @property
    def content_samples(self) -> int:
        return sum(
            n for v, n in self.verdicts.items() if v not in (Verdict.TRUNCATED, Verdict.TRANSPORT)
        )


@dataclass(frozen=True)
class SampleRecord:
    run_id: str
    suite: str
    case_id: str
    index: int
    output: str
    verdict: Verdict
    finish_reason: FinishReason | None
    model: str = ""
    seed: int | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    error: str | None = None
    attempts: int = 1
    assertions: tuple[AssertionResult, ...] = ()
    created_at: str = ""


@dataclass(frozen=True)
class TriageRecord:
    """Where the triage of one case of one run stands: its cause, or how far the reruns got.

    `state` is a cause word (prompt, model, case, noise, case-changed, undecided), `running`,
    `stopped`, or an action taken (retired, accepted); `detail` holds the last diagnosis.
    """

    run_id: str
    suite: str
    case_id: str
    state: str
    progress: float = 0.0
    detail: Mapping[str, Any] = field(default_factory=dict)
    updated_at: str = ""


@dataclass(frozen=True)
class CiOrigin:
    """The CI run a pulled run came from: shown beside it, with a link back to CI."""

    #: The CI system (`github`), and the repository as it names it (`owner/name`).
    provider: str
    repo: str
    ci_run_id: str
    #: The number CI shows for the run (`#128`), None when the CI system has none.
    run_number: int | None
    url: str
    event: str | None = None
    branch: str | None = None
    #: The artifact the run was read from.
    artifact: str = ""

    @property
    def label(self) -> str:
        """`CI #128`, or the CI run id when CI gives no number."""
        return f"CI #{self.run_number}" if self.run_number is not None else f"CI {self.ci_run_id}"


@dataclass(frozen=True)
class SampleUsage:
    """A sample's latency, tokens and cost, read without its output text."""

    verdict: Verdict
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
