"""The one builder of synthetic stores, for tests and benchmarks: runs written through RunStore.

A run is a `RunSpec` of `CaseSpec`s, each case a list of sample verdicts; everything else
(outputs, assertion results, latency, tokens) has a plain default a spec can override.
Benchmarks import it with `tests/` on `sys.path`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from redline.casemodel.effective import default_required
from redline.running.store import RunStore
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.messages import Step, ToolCall
from redline.vocabulary.outcome import add_counts, case_outcome, run_result
from redline.vocabulary.records import (
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict

OK, WRONG, MALFORMED = Verdict.OK, Verdict.WRONG, Verdict.MALFORMED
TRUNCATED, TRANSPORT, REFUSED = Verdict.TRUNCATED, Verdict.TRANSPORT, Verdict.REFUSED


@dataclass
class CaseSpec:
    case_id: str
    verdicts: Sequence[Verdict]
    suite: str = "suite-a"
    tier: str = "quality"
    required: int | None = None
    case_hash: str = "hash-1"
    outputs: Sequence[str] | None = None
    #: Per-sample score of assertion 0 (type `score_type`); None: no scored assertion.
    scores: Sequence[float] | None = None
    score_type: str = "mentions"
    #: Per-sample assertion results, given exactly (instead of the ones made from verdicts).
    assertions: Sequence[Sequence[AssertionResult]] | None = None
    #: Per-sample latency (default: 100 ms each) and token counts.
    latency_ms: Sequence[float] | None = None
    input_tokens: int | None = None
    #: Of the input tokens, those read from / written to the provider's prompt cache.
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: Sequence[int] | int | None = None
    #: Per-sample reason redline stopped generating (None: the model finished).
    stopped_early: Sequence[str | None] | None = None
    #: Per-sample tool calls of the answer, and steps of a tool loop.
    tool_calls: Sequence[tuple[ToolCall, ...]] | None = None
    steps: Sequence[tuple[Step, ...]] | None = None


@dataclass
class RunSpec:
    run_id: str
    cases: Sequence[CaseSpec]
    started_at: str = "2026-01-01T00:00:00.000+00:00"
    kind: RunKind = RunKind.RUN
    model_id: str = "local:model-a"
    parent_id: str | None = None
    status: RunStatus = RunStatus.FINISHED
    git_commit: str | None = "abc123"
    git_dirty: bool = False
    manifest: Mapping[str, str] = field(default_factory=lambda: {"suite-a/suite.yaml": "s1"})
    #: The run's recorded CLI arguments (e.g. `{"shard": [1, 2]}` for a shard of a CI matrix).
    args: Mapping[str, object] = field(default_factory=dict)
    model_alias: str = "default"
    #: When the run ended (default: five minutes after it started).
    finished_at: str | None = None
    redline_version: str = "0.1.0"


def ok_cases(n: int, samples: int = 5, **kw: object) -> list[CaseSpec]:
    return [CaseSpec(f"c{i:02d}", [OK] * samples, **kw) for i in range(n)]  # type: ignore[arg-type]


def _sample(spec: CaseSpec, run: RunSpec, index: int, verdict: Verdict) -> SampleRecord:
    output = spec.outputs[index] if spec.outputs else f"{spec.case_id} answer {index}"
    tokens = spec.output_tokens
    return SampleRecord(
        run_id=run.run_id,
        suite=spec.suite,
        case_id=spec.case_id,
        index=index,
        output=output,
        verdict=verdict,
        finish_reason=FinishReason.LENGTH if verdict is TRUNCATED else FinishReason.STOP,
        model=run.model_id,
        latency_ms=spec.latency_ms[index] if spec.latency_ms is not None else 100.0,
        input_tokens=spec.input_tokens,
        cached_input_tokens=spec.cached_input_tokens,
        cache_write_tokens=spec.cache_write_tokens,
        output_tokens=tokens[index] if isinstance(tokens, Sequence) else tokens,
        error="connection reset" if verdict is TRANSPORT else None,
        stopped_early=spec.stopped_early[index] if spec.stopped_early is not None else None,
        tool_calls=spec.tool_calls[index] if spec.tool_calls is not None else (),
        steps=spec.steps[index] if spec.steps is not None else (),
        assertions=(
            tuple(spec.assertions[index])
            if spec.assertions is not None
            else _assertions(spec, index, verdict)
        ),
        created_at=run.started_at,
    )


def _assertions(spec: CaseSpec, index: int, verdict: Verdict) -> tuple[AssertionResult, ...]:
    results: list[AssertionResult] = []
    if spec.scores is not None:
        results.append(
            AssertionResult(
                index=0,
                type=spec.score_type,
                status=AssertionStatus.PASSED,
                reason="scored",
                score=spec.scores[index],
                threshold=0.3,
            )
        )
    if verdict in (WRONG, MALFORMED):
        results.append(
            AssertionResult(
                index=1,
                type="not-contains" if verdict is WRONG else "is-json",
                status=AssertionStatus.FAILED,
                reason="found 'Here is'" if verdict is WRONG else "not JSON",
                structural=verdict is MALFORMED,
            )
        )
    return tuple(results)


def case_record(spec: CaseSpec, run: RunSpec) -> CaseRecord:
    counts = add_counts([{v: list(spec.verdicts).count(v) for v in set(spec.verdicts)}])
    n = len(spec.verdicts)
    required = spec.required if spec.required is not None else default_required(spec.tier, n)
    return CaseRecord(
        run_id=run.run_id,
        suite=spec.suite,
        case_id=spec.case_id,
        tier=spec.tier,
        model_id=run.model_id,
        samples=n,
        required=required,
        passes=counts[OK],
        result=case_outcome(required, counts),
        verdicts=counts,
        case_hash=spec.case_hash,
    )


def write_run(store: RunStore, run: RunSpec) -> RunRecord:
    cases = [case_record(c, run) for c in run.cases]
    result: RunResult | None = None
    if run.status is RunStatus.FINISHED:
        result = run_result((c.result for c in cases), add_counts(c.verdicts for c in cases))
    record = RunRecord(
        id=run.run_id,
        kind=run.kind,
        status=RunStatus.RUNNING,
        result=None,
        started_at=run.started_at,
        finished_at=None,
        model_id=run.model_id,
        model_alias=run.model_alias,
        suites=tuple(sorted({c.suite for c in run.cases})),
        parent_id=run.parent_id,
        git_commit=run.git_commit,
        git_dirty=run.git_dirty,
        redline_version=run.redline_version,
        args=dict(run.args),
        manifest=dict(run.manifest),
    )
    store.begin_run(record)
    store.add_samples(
        _sample(spec, run, i, verdict)
        for spec in run.cases
        for i, verdict in enumerate(spec.verdicts)
    )
    store.put_cases(cases)
    if run.status is not RunStatus.RUNNING:
        ended = run.finished_at or run.started_at.replace("00:00.000", "05:00.000")
        store.finish_run(run.run_id, run.status, result, ended)
    return store.run(run.run_id)


def open_store(tmp_path: Path) -> RunStore:
    return RunStore.open(tmp_path / ".redline" / "redline.db")


def write_config(root: Path) -> None:
    """A redline.toml whose store is root/.redline/redline.db, for CLI tests (cwd = root)."""
    (root / "redline.toml").write_text(
        'store = ".redline/redline.db"\n[models]\ndefault = "local:model-a"\n', encoding="utf-8"
    )
