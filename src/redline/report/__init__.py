"""Reports of one run for CI and people: JUnit XML, one self-contained HTML file, markdown.

`build_run_report` gathers everything the three renderers need from the store once, so
each renderer is a pure function of a `RunReport`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from redline.deciding.baseline import Baseline, load_baseline
from redline.deciding.compare import Comparison, compare_cases
from redline.deciding.drift import drifted_cases
from redline.deciding.history import Marginal, case_history, find_marginal
from redline.running.quarantine import (
    QuarantinedCase,
    case_counts,
    describe_counts,
    quarantined_cases,
    shown_result,
)
from redline.running.store import RunStore
from redline.running.usage import Usage, usage_of_samples
from redline.vocabulary.outcome import add_counts, content_comparison_withheld
from redline.vocabulary.records import (
    CaseRecord,
    CiOrigin,
    RunKind,
    RunRecord,
    SampleRecord,
)
from redline.vocabulary.verdicts import AssertionResult, Verdict

#: How many scheduled runs (up to the reported one) the history sparklines cover.
HISTORY_RUNS = 20


@dataclass(frozen=True)
class CaseReport:
    case: CaseRecord
    samples: tuple[SampleRecord, ...]
    #: The baseline's golden output for this case, None without a baseline entry.
    golden: str | None
    #: The baseline's case hash differs from this run's: "case changed".
    changed_since_baseline: bool
    #: Pass rates of recent scheduled runs, oldest first, ending with this run when scheduled.
    history: tuple[float | None, ...]
    #: How long the case has sat at the edge up to this run, None when it does not.
    marginal: Marginal | None = None

    @property
    def failing_samples(self) -> list[SampleRecord]:
        return [s for s in self.samples if s.verdict is not Verdict.OK]

    def failing_assertions(self) -> dict[str, int]:
        """Failed assertion type → number of samples it failed in."""
        counts: dict[str, int] = defaultdict(int)
        for s in self.samples:
            for a in s.assertions:
                if a.failed:
                    counts[a.type] += 1
        return dict(sorted(counts.items()))

    def failing_text(self) -> str:
        """The failed assertions in words: `type ×samples`, comma-separated ('' if none)."""
        return ", ".join(f"{t} ×{n}" for t, n in self.failing_assertions().items())


@dataclass(frozen=True)
class RunReport:
    run: RunRecord
    cases: tuple[CaseReport, ...]
    verdicts: Mapping[Verdict, int]
    #: Why this run's content cannot be compared (content diffs need enough evidence), or None.
    withheld: str | None
    #: Cases held in quarantine: reported on their own, never counted as red.
    quarantined: tuple[QuarantinedCase, ...] = ()
    #: This run against the scheduled run before it (last night), None when there is none.
    previous: Comparison | None = None
    #: The CI run that previous run was pulled from, for a link back to it.
    previous_origin: CiOrigin | None = None
    #: Failing cases that drifted since that run (`deciding.drift`).
    drifted: tuple[CaseRecord, ...] = ()

    @property
    def marginal(self) -> list[tuple[CaseRecord, Marginal]]:
        return [(c.case, c.marginal) for c in self.cases if c.marginal is not None]

    def case_counts(self) -> str:
        """`3 pass, 1 fail, …, 2 quarantined`: held cases apart, never counted as failures."""
        return describe_counts(case_counts(self.run, [c.case for c in self.cases]))

    def shown_result(self, case: CaseRecord) -> str:
        return shown_result(self.run, case)

    @property
    def usage(self) -> Usage:
        """Latency, tokens and the cost recorded with the samples, over the whole run."""
        return usage_of_samples(s for c in self.cases for s in c.samples)


def previous_run_sentence(comparison: Comparison) -> str:
    """One sentence on a run against the scheduled run before it (both reports use it)."""
    if comparison.withheld:
        return "Content comparison withheld: " + "; ".join(comparison.withheld)
    drops = comparison.significant_drops
    rises = [d for d in comparison.deltas if d.significant and not d.significant_drop]
    return (
        f"{len(drops)} case(s) dropped significantly, {len(rises)} rose significantly "
        f"(one-sided Fisher p < 0.05), {len(comparison.changed)} case file(s) changed."
    )


def drift_sentence(report: RunReport) -> str | None:
    """`3 cases drifted since last night: …`, or None when none did (both reports use it)."""
    n = len(report.drifted)
    if not n:
        return None
    names = ", ".join(f"{c.suite}/{c.case_id}" for c in report.drifted[:10])
    more = f" and {n - 10} more" if n > 10 else ""
    cases, read = ("cases", "they read") if n != 1 else ("case", "it reads")
    return (
        f"{n} {cases} drifted since last night: nothing {read} changed, yet the same "
        f"configuration now fails significantly more than its stored runs on "
        f"{report.run.model_id} ({names}{more}); `redline rerun` says more."
    )


def failed_assertions(sample: SampleRecord) -> list[AssertionResult]:
    return [a for a in sample.assertions if a.failed]


def build_run_report(store: RunStore, run_id: str, baselines_dir: Path | None = None) -> RunReport:
    run = store.run(run_id)
    cases = store.cases(run.id)
    by_case: dict[tuple[str, str], list[SampleRecord]] = defaultdict(list)
    for s in store.samples(run.id):
        by_case[(s.suite, s.case_id)].append(s)
    baselines: dict[str, Baseline | None] = {}
    if baselines_dir is not None:
        baselines = {s: load_baseline(baselines_dir, s) for s in {c.suite for c in cases}}
    history = _recent_rates(store, run)
    reports = []
    for c in cases:
        baseline = baselines.get(c.suite)
        entry = None if baseline is None else baseline.cases.get(c.case_id)
        reports.append(
            CaseReport(
                case=c,
                samples=tuple(by_case[(c.suite, c.case_id)]),
                golden=None if entry is None or entry.golden is None else entry.golden.output,
                changed_since_baseline=entry is not None and entry.case_hash != c.case_hash,
                history=tuple(history.get((c.suite, c.case_id), ())),
                marginal=_marginal(store, run, c),
            )
        )
    verdicts = add_counts(c.verdicts for c in cases)
    evaluated = sum(1 for c in cases if c.content_samples > 0)
    previous = _previous_scheduled(store, run)
    return RunReport(
        run,
        tuple(reports),
        verdicts,
        content_comparison_withheld(evaluated, verdicts),
        quarantined=tuple(quarantined_cases(run, cases)),
        previous=None
        if previous is None
        else compare_cases(previous, store.cases(previous.id), run, cases),
        previous_origin=None
        if previous is None
        else store.ci_origins([previous.id]).get(previous.id),
        drifted=tuple(drifted_cases(store, run, previous)),
    )


def _marginal(store: RunStore, run: RunRecord, case: CaseRecord) -> Marginal | None:
    if run.kind is not RunKind.RUN:
        return None
    series = case_history(store, case.case_id, case.suite).scheduled
    return find_marginal([p for p in series if p.started_at <= run.started_at])


def _previous_scheduled(store: RunStore, run: RunRecord) -> RunRecord | None:
    """The scheduled run that started last before `run` (in a nightly: the night before)."""
    if run.kind is not RunKind.RUN:
        return None
    earlier = (r for r in store.runs(kind=RunKind.RUN) if r.started_at < run.started_at)
    return next(earlier, None)


def _recent_rates(store: RunStore, run: RunRecord) -> dict[tuple[str, str], list[float | None]]:
    """Per case, its pass rate in the last HISTORY_RUNS scheduled runs up to `run`."""
    scheduled = [r for r in store.runs(kind=RunKind.RUN) if r.started_at <= run.started_at]
    recent = list(reversed(scheduled[:HISTORY_RUNS]))
    rates: dict[tuple[str, str], list[float | None]] = defaultdict(list)
    for r in recent:
        for c in store.cases(r.id):
            content = c.content_samples
            rates[(c.suite, c.case_id)].append(c.passes / content if content else None)
    return rates
