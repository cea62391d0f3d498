"""Two runs side by side: model migrations and prompt changes, read case by case.

Rates are over content samples only (truncated and transport samples say nothing
about the content, rule 5). Each case's change is tested with a one-sided Fisher
exact test in the direction it moved; a drop with p < 0.05 is a significant drop.
Rule 8 withholds the per-case content comparison when either run evaluated fewer
than 8 cases or has more than 20% non-content samples. Cases whose file changed
between the runs are listed apart, never compared as regressions.

A run that covered only part of its suites (a rerun of one case, `--case`, `--tier`,
a shard) is compared on what it ran: the other run is narrowed to the same cases and
inputs, so the cases it left out are neither "only in A" nor "removed" inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.baseline import is_partial_run
from redline.outcome import add_counts, content_comparison_withheld
from redline.records import CaseRecord, RunRecord
from redline.seeds import frozen_together
from redline.stats import Alternative, fisher_one_sided
from redline.store import RunStore
from redline.verdicts import VERDICT_ORDER, Verdict

SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class RunSide:
    run: RunRecord
    cases_evaluated: int
    verdicts: Mapping[Verdict, int]
    #: Why rule 8 withholds this run's content comparison, None when it does not.
    withheld: str | None


@dataclass(frozen=True)
class ManifestChange:
    path: str
    a: str | None
    b: str | None

    @property
    def kind(self) -> str:
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        return "changed"


@dataclass(frozen=True)
class CaseDelta:
    suite: str
    case_id: str
    a: CaseRecord
    b: CaseRecord
    p_value: float
    #: False when both runs froze their seeds on the same model: their samples are the same
    #: draws, so a significance test between them would mean nothing.
    independent: bool = True

    @property
    def p_text(self) -> str:
        if not self.independent:
            return "n/a (same draws)"
        return f"{self.p_value:.4f}" if self.p_value >= 1e-4 else f"{self.p_value:.1e}"

    @property
    def rate_a(self) -> float | None:
        return _rate(self.a)

    @property
    def rate_b(self) -> float | None:
        return _rate(self.b)

    @property
    def delta(self) -> float | None:
        ra, rb = self.rate_a, self.rate_b
        return None if ra is None or rb is None else rb - ra

    @property
    def significant(self) -> bool:
        return (
            self.independent
            and self.delta is not None
            and self.delta != 0
            and self.p_value < SIGNIFICANCE
        )

    @property
    def significant_drop(self) -> bool:
        return self.significant and self.delta is not None and self.delta < 0

    @property
    def verdict_delta(self) -> dict[Verdict, int]:
        return {v: self.b.verdicts.get(v, 0) - self.a.verdicts.get(v, 0) for v in VERDICT_ORDER}


@dataclass(frozen=True)
class Comparison:
    a: RunSide
    b: RunSide
    manifest_changes: tuple[ManifestChange, ...]
    #: Per-case content deltas, largest drop first; empty when withheld.
    deltas: tuple[CaseDelta, ...]
    #: Cases whose case hash differs between the runs: (A's record, B's record).
    changed: tuple[tuple[CaseRecord, CaseRecord], ...]
    only_a: tuple[CaseRecord, ...]
    only_b: tuple[CaseRecord, ...]
    #: Both runs froze their seeds on the same model (see `CaseDelta.independent`).
    same_draws: bool = False
    #: Set when one run covered only part of its suites: the comparison covers just that part.
    narrowed_to: str | None = None

    @property
    def withheld(self) -> list[str]:
        """Rule-8 reasons, each naming its run; empty when content can be compared."""
        return [
            f"run {side.run.id}: {side.withheld}"
            for side in (self.a, self.b)
            if side.withheld is not None
        ]

    @property
    def significant_drops(self) -> list[CaseDelta]:
        return [d for d in self.deltas if d.significant_drop]

    @property
    def verdict_delta(self) -> dict[Verdict, int]:
        return {v: self.b.verdicts.get(v, 0) - self.a.verdicts.get(v, 0) for v in VERDICT_ORDER}


def _rate(case: CaseRecord) -> float | None:
    content = case.content_samples
    return case.passes / content if content else None


def _side(run: RunRecord, cases: Sequence[CaseRecord]) -> RunSide:
    verdicts = add_counts(c.verdicts for c in cases)
    evaluated = sum(1 for c in cases if c.content_samples > 0)
    return RunSide(run, evaluated, verdicts, content_comparison_withheld(evaluated, verdicts))


def case_delta(a: CaseRecord, b: CaseRecord, *, independent: bool = True) -> CaseDelta:
    """One case's change from A to B, with the one-sided p-value in its direction."""
    ra, rb = _rate(a), _rate(b)
    if ra is None or rb is None or ra == rb:
        p = 1.0
    else:
        p = fisher_one_sided(
            a.passes,
            a.content_samples,
            b.passes,
            b.content_samples,
            "greater" if rb < ra else "less",
        )
    return CaseDelta(a.suite, a.case_id, a, b, p, independent)


def compare_cases(
    run_a: RunRecord,
    cases_a: Sequence[CaseRecord],
    run_b: RunRecord,
    cases_b: Sequence[CaseRecord],
) -> Comparison:
    manifest_a, manifest_b = dict(run_a.manifest), dict(run_b.manifest)
    narrowed_to = None
    partial_a, partial_b = is_partial_run(run_a), is_partial_run(run_b)
    if partial_a or partial_b:
        keys_a = {(c.suite, c.case_id) for c in cases_a}
        keys_b = {(c.suite, c.case_id) for c in cases_b}
        if partial_b:
            cases_a = [c for c in cases_a if (c.suite, c.case_id) in keys_b]
            manifest_a = {p: h for p, h in manifest_a.items() if p in manifest_b}
        if partial_a:
            cases_b = [c for c in cases_b if (c.suite, c.case_id) in keys_a]
            manifest_b = {p: h for p, h in manifest_b.items() if p in run_a.manifest}
        narrowed_to = " and ".join(r.id for r, p in ((run_a, partial_a), (run_b, partial_b)) if p)
    side_a, side_b = _side(run_a, cases_a), _side(run_b, cases_b)
    by_a = {(c.suite, c.case_id): c for c in cases_a}
    by_b = {(c.suite, c.case_id): c for c in cases_b}
    both = sorted(set(by_a) & set(by_b))
    changed = tuple((by_a[k], by_b[k]) for k in both if by_a[k].case_hash != by_b[k].case_hash)
    withheld = side_a.withheld is not None or side_b.withheld is not None
    same_draws = frozen_together(run_a, run_b)
    deltas: list[CaseDelta] = []
    if not withheld:
        deltas = [
            case_delta(by_a[k], by_b[k], independent=not same_draws)
            for k in both
            if by_a[k].case_hash == by_b[k].case_hash
        ]
        deltas.sort(
            key=lambda d: (
                d.delta is None,
                d.delta if d.delta is not None else 0.0,
                d.p_value,
                d.suite,
                d.case_id,
            )
        )
    manifest = tuple(
        ManifestChange(p, manifest_a.get(p), manifest_b.get(p))
        for p in sorted(set(manifest_a) | set(manifest_b))
        if manifest_a.get(p) != manifest_b.get(p)
    )
    return Comparison(
        a=side_a,
        b=side_b,
        manifest_changes=manifest,
        deltas=tuple(deltas),
        changed=changed,
        only_a=tuple(by_a[k] for k in sorted(set(by_a) - set(by_b))),
        only_b=tuple(by_b[k] for k in sorted(set(by_b) - set(by_a))),
        same_draws=same_draws,
        narrowed_to=narrowed_to,
    )


def compare_runs(store: RunStore, run_a: str, run_b: str) -> Comparison:
    """Compare two stored runs (ids or unique prefixes)."""
    a, b = store.run(run_a), store.run(run_b)
    return compare_cases(a, store.cases(a.id), b, store.cases(b.id))


@dataclass(frozen=True)
class PooledSummary:
    """The comparison in a few numbers: how many compared cases moved which way, and the
    pass rate pooled over every compared case's content samples."""

    dropped: int
    rose: int
    unchanged: int
    significant_drops: int
    significant_rises: int
    #: Cases whose file changed between the runs: listed apart, not compared.
    changed: int
    passes_a: int
    content_a: int
    passes_b: int
    content_b: int
    #: One-sided Fisher p of the pooled rates, in the direction they moved.
    p_value: float

    @property
    def rate_a(self) -> float | None:
        return self.passes_a / self.content_a if self.content_a else None

    @property
    def rate_b(self) -> float | None:
        return self.passes_b / self.content_b if self.content_b else None


def pooled_summary(comparison: Comparison) -> PooledSummary:
    deltas = comparison.deltas
    passes_a = sum(d.a.passes for d in deltas)
    content_a = sum(d.a.content_samples for d in deltas)
    passes_b = sum(d.b.passes for d in deltas)
    content_b = sum(d.b.content_samples for d in deltas)
    p = 1.0
    if content_a and content_b and passes_a * content_b != passes_b * content_a:
        direction: Alternative = (
            "greater" if passes_b * content_a < passes_a * content_b else "less"
        )
        p = fisher_one_sided(passes_a, content_a, passes_b, content_b, direction)
    return PooledSummary(
        dropped=sum(1 for d in deltas if d.delta is not None and d.delta < 0),
        rose=sum(1 for d in deltas if d.delta is not None and d.delta > 0),
        unchanged=sum(1 for d in deltas if not d.delta),
        significant_drops=sum(1 for d in deltas if d.significant_drop),
        significant_rises=sum(1 for d in deltas if d.significant and not d.significant_drop),
        changed=len(comparison.changed),
        passes_a=passes_a,
        content_a=content_a,
        passes_b=passes_b,
        content_b=content_b,
        p_value=p,
    )
