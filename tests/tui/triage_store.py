"""A fixed, deterministic store for the triage TUI tests: no clock, no randomness."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from redline.running.store import RunStore
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.outcome import add_counts, case_outcome, run_result
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunResult,
    RunStatus,
    SampleRecord,
)
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict

SUITE = "support"
MODEL = "openai:fake-model-2026-01"
#: The first two nightly runs ran on the model pinned before the bump.
OLD_MODEL = "openai:fake-model-2025-12"
RED_RUN = "c0ffee000004"
EARLIER_RUNS = ("c0ffee000001", "c0ffee000002", "c0ffee000003")
RERUN = "beef00000001"
HOSTILE_OUTPUT = "Total: \x1b[31m12k\x1b[0m [bold]not bold[/bold] NUL:\x00 end"
GOLDEN = "Your refund of 12,000 IDR was approved.\nIt arrives in 3 days."


@dataclass(frozen=True)
class CaseSpec:
    case_id: str
    tier: str
    samples: int
    required: int
    #: Verdicts per run: EARLIER_RUNS..., RED_RUN.
    runs: Sequence[Sequence[Verdict]]
    case_hash: str = "h-stable"


def _v(spec: str) -> list[Verdict]:
    codes = {
        "o": Verdict.OK,
        "w": Verdict.WRONG,
        "m": Verdict.MALFORMED,
        "r": Verdict.REFUSED,
        "t": Verdict.TRUNCATED,
        "x": Verdict.TRANSPORT,
    }
    return [codes[c] for c in spec]


CASES: tuple[CaseSpec, ...] = (
    CaseSpec(
        "0042-amount-suffix", "quality", 5, 4, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("oowwo")]
    ),
    CaseSpec(
        "0007-marginal-tone", "quality", 5, 4, [_v("oooow"), _v("wooow"), _v("oooow"), _v("owowo")]
    ),
    CaseSpec(
        "0013-json-shape", "contract", 5, 5, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooomo")]
    ),
    CaseSpec(
        "0021-refund-policy", "quality", 5, 4, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooooo")]
    ),
    CaseSpec(
        "0030-greeting", "quality", 5, 4, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("oooot")]
    ),
    CaseSpec(
        "0031-escalation",
        "contract",
        5,
        5,
        [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooooo")],
        case_hash="h-new",
    ),
    CaseSpec(
        "0044-refusal", "contract", 5, 5, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooooo")]
    ),
    CaseSpec(
        "0050-long-answer", "quality", 5, 4, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooooo")]
    ),
    CaseSpec(
        "0051-short-answer", "quality", 5, 4, [_v("ooooo"), _v("ooooo"), _v("ooooo"), _v("ooooo")]
    ),
)


def _output(case_id: str, index: int, verdict: Verdict) -> str:
    if case_id == "0042-amount-suffix" and index == 2:
        return HOSTILE_OUTPUT
    if verdict is Verdict.OK:
        return GOLDEN
    return f"Your refund of 12k was approved.\nIt arrives in {index + 2} days."


def _assertions(verdict: Verdict) -> tuple[AssertionResult, ...]:
    passed = verdict is Verdict.OK
    return (
        AssertionResult(
            index=0,
            type="contains",
            status=AssertionStatus.PASSED if passed else AssertionStatus.FAILED,
            reason="found '12,000'" if passed else "'12,000' not found in the output",
        ),
        AssertionResult(0 + 1, "max-chars", AssertionStatus.PASSED, "62 <= 400", 62.0, 400.0),
    )


def _run_record(
    run_id: str,
    day: int,
    *,
    kind: RunKind = RunKind.RUN,
    parent: str | None = None,
    model: str = MODEL,
) -> RunRecord:
    return RunRecord(
        id=run_id,
        kind=kind,
        status=RunStatus.RUNNING,
        result=None,
        started_at=f"2026-11-{day:02d}T02:00:00.000+00:00",
        finished_at=None,
        model_id=model,
        model_alias="fake",
        suites=(SUITE,),
        parent_id=parent,
        git_commit="0123456789abcdef0123456789abcdef01234567",
        git_dirty=kind is RunKind.RERUN,
        redline_version="0.1.0",
        manifest={"cases/support/suite.yaml": "a" * 64, "cases/support/prompt.md": "b" * 64},
    )


def _store_run(
    store: RunStore,
    record: RunRecord,
    cases: Sequence[tuple[CaseSpec, Sequence[Verdict]]],
    day: int,
) -> None:
    store.begin_run(record)
    records = []
    for spec, verdicts in cases:
        for i, verdict in enumerate(verdicts):
            store.add_sample(
                SampleRecord(
                    run_id=record.id,
                    suite=SUITE,
                    case_id=spec.case_id,
                    index=i,
                    output=_output(spec.case_id, i, verdict),
                    verdict=verdict,
                    finish_reason=(
                        FinishReason.LENGTH if verdict is Verdict.TRUNCATED else FinishReason.STOP
                    ),
                    model=record.model_id,
                    latency_ms=120.0 + i,
                    output_tokens=14,
                    error="connection reset" if verdict is Verdict.TRANSPORT else None,
                    assertions=_assertions(verdict),
                    created_at=f"2026-11-{day:02d}T02:00:0{i}.000+00:00",
                )
            )
        counts = add_counts([{v: verdicts.count(v) for v in set(verdicts)}])
        required = (
            spec.required
            if len(verdicts) == spec.samples
            else max(1, -(-len(verdicts) * spec.required // spec.samples))
        )
        records.append(
            CaseRecord(
                run_id=record.id,
                suite=SUITE,
                case_id=spec.case_id,
                tier=spec.tier,
                model_id=record.model_id,
                samples=len(verdicts),
                required=required,
                passes=counts[Verdict.OK],
                result=case_outcome(required, counts),
                verdicts=counts,
                case_hash=spec.case_hash if record.id == RED_RUN else "h-stable",
            )
        )
    for r in records:
        store.put_case(r)
    result = run_result([r.result for r in records], add_counts(r.verdicts for r in records))
    store.finish_run(record.id, RunStatus.FINISHED, result, f"2026-11-{day:02d}T02:30:00.000+00:00")


def build_store(path: Path, *, with_rerun: bool = True) -> RunStore:
    """Three green nightly runs, then a red one (RED_RUN); optionally a rerun of 0042."""
    store = RunStore.open(path)
    for n, run_id in enumerate((*EARLIER_RUNS, RED_RUN)):
        day = 20 + n
        model = OLD_MODEL if n < 2 else MODEL
        _store_run(
            store,
            _run_record(run_id, day, model=model),
            [(spec, spec.runs[n]) for spec in CASES],
            day,
        )
    if with_rerun:
        rerun = _run_record(RERUN, 24, kind=RunKind.RERUN, parent=RED_RUN)
        _store_run(store, rerun, [(CASES[0], _v("oowwowwoowwowowwowow"))], 24)
    return store


PARTIAL_RERUN = "beef00000002"


def add_interrupted_rerun(store: RunStore) -> None:
    """A later rerun of 0042 cancelled after 4 samples (all ok): kept, never accepted."""
    _store_run(store, _run_record(PARTIAL_RERUN, 25, kind=RunKind.RERUN, parent=RED_RUN), [], 25)
    spec = CASES[0]
    store.put_case(
        CaseRecord(
            run_id=PARTIAL_RERUN,
            suite=SUITE,
            case_id=spec.case_id,
            tier=spec.tier,
            model_id=MODEL,
            samples=4,
            required=4,
            passes=4,
            result=CaseOutcome.PASS,
            verdicts={Verdict.OK: 4},
            case_hash="h-stable",
        )
    )
    store.finish_run(PARTIAL_RERUN, RunStatus.INTERRUPTED, None, "2026-11-25T02:30:00.000+00:00")


def expected_result(store: RunStore) -> RunResult | None:
    return store.run(RED_RUN).result
