"""Two runs side by side: model migrations and prompt changes, read case by case.

Rates are over content samples only: truncated and transport samples say nothing about
the content (docs/rules.md: A verdict per sample). Each case's change is tested with a
one-sided Fisher exact test in the direction it moved; a drop with p < 0.05 is a
significant drop. The per-case content comparison is withheld when either run evaluated
fewer than 8 cases or has more than 20% non-content samples (docs/rules.md: Content diffs
need enough evidence). Cases whose file changed between the runs are listed apart, never
compared as regressions.

Beside quality, each case and the total carry latency, tokens and cost (`redline.running.usage`),
which are never withheld for want of content evidence: they measure the model's price and
speed, not its content.
Cases are split four ways by their pass/fail result: both pass, only A fails, only B
fails, both fail — a case both models fail is more likely a problem of the case than an
effect of the migration.
A run that covered only part of its suites (a rerun of one case, `--case`, `--tier`,
a shard) is compared on what it ran: the other run is narrowed to the same cases and
inputs, so the cases it left out are neither "only in A" nor "removed" inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from redline.config import Price
from redline.deciding.baseline import is_partial_run
from redline.deciding.stats import fisher_one_sided
from redline.running.seeds import frozen_together
from redline.running.store import RunStore
from redline.running.usage import EMPTY, Usage, usage_of
from redline.vocabulary.outcome import add_counts, content_comparison_withheld
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunKind, RunRecord, SampleUsage
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

#: Looks up a run's model id in the price table (`Config.price`).
PriceLookup = Callable[[str], Price | None]

SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class RunSide:
    run: RunRecord
    cases_evaluated: int
    verdicts: Mapping[Verdict, int]
    #: Why this run's content comparison is withheld (too little evidence), None when it is not.
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
    usage_a: Usage = EMPTY
    usage_b: Usage = EMPTY

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


class Split(StrEnum):
    """Where a case lands when both runs' pass/fail results are put side by side."""

    BOTH_PASS = "both pass"
    ONLY_A_FAILS = "only A fails"
    ONLY_B_FAILS = "only B fails"
    BOTH_FAIL = "both fail"
    UNDECIDED = "undecided"


def split_of(delta: CaseDelta) -> Split:
    a, b = delta.a.result, delta.b.result
    decided = (CaseOutcome.PASS, CaseOutcome.FAIL)
    if a not in decided or b not in decided:
        return Split.UNDECIDED
    if a is CaseOutcome.PASS:
        return Split.BOTH_PASS if b is CaseOutcome.PASS else Split.ONLY_B_FAILS
    return Split.ONLY_A_FAILS if b is CaseOutcome.PASS else Split.BOTH_FAIL


@dataclass(frozen=True)
class PooledRates:
    """Each side's pass rate pooled over the content samples of the compared cases."""

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

    @property
    def delta(self) -> float | None:
        ra, rb = self.rate_a, self.rate_b
        return None if ra is None or rb is None else rb - ra


def pooled_rates(deltas: Sequence[CaseDelta]) -> PooledRates:
    pa = sum(d.a.passes for d in deltas)
    na = sum(d.a.content_samples for d in deltas)
    pb = sum(d.b.passes for d in deltas)
    nb = sum(d.b.content_samples for d in deltas)
    return PooledRates(pa, na, pb, nb, _p_value(pa, na, pb, nb))


@dataclass(frozen=True)
class Total(PooledRates):
    """Every compared case together: pooled pass rate, usage and verdict counts per side."""

    usage_a: Usage
    usage_b: Usage
    verdicts_a: Mapping[Verdict, int]
    verdicts_b: Mapping[Verdict, int]

    @property
    def verdict_delta(self) -> dict[Verdict, int]:
        return {v: self.verdicts_b.get(v, 0) - self.verdicts_a.get(v, 0) for v in VERDICT_ORDER}


@dataclass(frozen=True)
class Comparison:
    a: RunSide
    b: RunSide
    manifest_changes: tuple[ManifestChange, ...]
    #: Every case in both runs with an unchanged case file, largest drop first.
    rows: tuple[CaseDelta, ...]
    #: Cases whose case hash differs between the runs: (A's record, B's record).
    changed: tuple[tuple[CaseRecord, CaseRecord], ...]
    only_a: tuple[CaseRecord, ...]
    only_b: tuple[CaseRecord, ...]
    total: Total = field(default_factory=lambda: Total(0, 0, 0, 0, 1.0, EMPTY, EMPTY, {}, {}))
    #: Both runs froze their seeds on the same model (see `CaseDelta.independent`).
    same_draws: bool = False
    #: Set when one run covered only part of its suites: the comparison covers just that part.
    narrowed_to: str | None = None

    @property
    def deltas(self) -> tuple[CaseDelta, ...]:
        """The per-case content deltas: the rows, or none while content is withheld."""
        return () if self.withheld else self.rows

    def split(self, which: Split) -> list[CaseDelta]:
        """The compared cases that land in `which` (empty while content is withheld)."""
        return [d for d in self.deltas if split_of(d) is which]

    @property
    def likely_case_problems(self) -> list[CaseDelta]:
        """Cases both models fail: suspect the case or its assertion before the migration."""
        return self.split(Split.BOTH_FAIL)

    @property
    def withheld(self) -> list[str]:
        """Why content cannot be compared, each naming its run (too little evidence), or
        that the runs have nothing in common; empty when content can be compared."""
        nothing = self.nothing_in_common
        if nothing is not None:
            return [nothing]
        return [
            f"run {side.run.id}: {side.withheld}"
            for side in (self.a, self.b)
            if side.withheld is not None
        ]

    @property
    def nothing_in_common(self) -> str | None:
        """None when the runs share a case; else that they share none, in words."""
        if self.rows or self.changed:
            return None
        a, b = sorted(self.a.run.suites), sorted(self.b.run.suites)
        if not set(a) & set(b):
            return (
                f"runs {self.a.run.id} and {self.b.run.id} share no suites "
                f"({', '.join(a) or 'none'} against {', '.join(b) or 'none'}): nothing to compare"
            )
        return f"runs {self.a.run.id} and {self.b.run.id} share no cases: nothing to compare"

    @property
    def significant_drops(self) -> list[CaseDelta]:
        return [d for d in self.deltas if d.significant_drop]

    @property
    def verdict_delta(self) -> dict[Verdict, int]:
        return {v: self.b.verdicts.get(v, 0) - self.a.verdicts.get(v, 0) for v in VERDICT_ORDER}


def manifest_changes(a: Mapping[str, str], b: Mapping[str, str]) -> list[ManifestChange]:
    """Every input whose hash differs between two manifests, by path."""
    return [
        ManifestChange(p, a.get(p), b.get(p))
        for p in sorted(set(a) | set(b))
        if a.get(p) != b.get(p)
    ]


def _rate(case: CaseRecord) -> float | None:
    content = case.content_samples
    return case.passes / content if content else None


def _side(run: RunRecord, cases: Sequence[CaseRecord]) -> RunSide:
    verdicts = add_counts(c.verdicts for c in cases)
    evaluated = sum(1 for c in cases if c.content_samples > 0)
    return RunSide(run, evaluated, verdicts, content_comparison_withheld(evaluated, verdicts))


def _p_value(passes_a: int, n_a: int, passes_b: int, n_b: int) -> float:
    """One-sided Fisher p in the direction the rate moved (1.0 when it did not)."""
    if not n_a or not n_b or passes_a * n_b == passes_b * n_a:
        return 1.0
    falling = passes_b * n_a < passes_a * n_b
    return fisher_one_sided(passes_a, n_a, passes_b, n_b, "greater" if falling else "less")


def case_delta(
    a: CaseRecord,
    b: CaseRecord,
    usage_a: Usage = EMPTY,
    usage_b: Usage = EMPTY,
    *,
    independent: bool = True,
) -> CaseDelta:
    """One case's change from A to B, with the one-sided p-value in its direction."""
    p = _p_value(a.passes, a.content_samples, b.passes, b.content_samples)
    return CaseDelta(a.suite, a.case_id, a, b, p, independent, usage_a, usage_b)


def _total(
    rows: Sequence[CaseDelta],
    samples_a: list[SampleUsage],
    samples_b: list[SampleUsage],
    price_a: Price | None,
    price_b: Price | None,
) -> Total:
    return Total(
        **dataclasses.asdict(pooled_rates(rows)),
        usage_a=usage_of(samples_a, price_a),
        usage_b=usage_of(samples_b, price_b),
        verdicts_a=add_counts(d.a.verdicts for d in rows),
        verdicts_b=add_counts(d.b.verdicts for d in rows),
    )


def compare_cases(
    run_a: RunRecord,
    cases_a: Sequence[CaseRecord],
    run_b: RunRecord,
    cases_b: Sequence[CaseRecord],
    usage_a: Mapping[tuple[str, str], list[SampleUsage]] | None = None,
    usage_b: Mapping[tuple[str, str], list[SampleUsage]] | None = None,
    price: PriceLookup | None = None,
) -> Comparison:
    """Compare two runs' case results; with the samples' usage, latency, tokens and cost too."""
    cases_a, manifest_a, cases_b, manifest_b, narrowed_to = _narrowed(
        run_a, cases_a, run_b, cases_b
    )
    side_a, side_b = _side(run_a, cases_a), _side(run_b, cases_b)
    by_a = {(c.suite, c.case_id): c for c in cases_a}
    by_b = {(c.suite, c.case_id): c for c in cases_b}
    both = sorted(set(by_a) & set(by_b))
    changed = tuple((by_a[k], by_b[k]) for k in both if by_a[k].case_hash != by_b[k].case_hash)
    price_a = price(run_a.model_id) if price is not None else None
    price_b = price(run_b.model_id) if price is not None else None
    ua, ub = usage_a or {}, usage_b or {}
    same_draws = frozen_together(run_a, run_b)
    same = [k for k in both if by_a[k].case_hash == by_b[k].case_hash]
    deltas = [
        case_delta(
            by_a[k],
            by_b[k],
            usage_of(ua.get(k, ()), price_a) if usage_a is not None else EMPTY,
            usage_of(ub.get(k, ()), price_b) if usage_b is not None else EMPTY,
            independent=not same_draws,
        )
        for k in same
    ]
    deltas.sort(key=_largest_drop_first)
    return Comparison(
        a=side_a,
        b=side_b,
        manifest_changes=tuple(manifest_changes(manifest_a, manifest_b)),
        rows=tuple(deltas),
        changed=changed,
        only_a=tuple(by_a[k] for k in sorted(set(by_a) - set(by_b))),
        only_b=tuple(by_b[k] for k in sorted(set(by_b) - set(by_a))),
        total=_total(
            deltas,
            [s for k in same for s in ua.get(k, ())],
            [s for k in same for s in ub.get(k, ())],
            price_a,
            price_b,
        ),
        same_draws=same_draws,
        narrowed_to=narrowed_to,
    )


def _narrowed(
    run_a: RunRecord,
    cases_a: Sequence[CaseRecord],
    run_b: RunRecord,
    cases_b: Sequence[CaseRecord],
) -> tuple[Sequence[CaseRecord], dict[str, str], Sequence[CaseRecord], dict[str, str], str | None]:
    """Each run's cases and manifest, narrowed to what a partial run (a rerun, --case,
    --tier, a shard) covered; and which run(s) narrowed the comparison, if any."""
    manifest_a, manifest_b = dict(run_a.manifest), dict(run_b.manifest)
    partial_a, partial_b = is_partial_run(run_a), is_partial_run(run_b)
    if not (partial_a or partial_b):
        return cases_a, manifest_a, cases_b, manifest_b, None
    keys_a = {(c.suite, c.case_id) for c in cases_a}
    keys_b = {(c.suite, c.case_id) for c in cases_b}
    if partial_b:
        cases_a = [c for c in cases_a if (c.suite, c.case_id) in keys_b]
        manifest_a = {p: h for p, h in manifest_a.items() if p in manifest_b}
    if partial_a:
        cases_b = [c for c in cases_b if (c.suite, c.case_id) in keys_a]
        manifest_b = {p: h for p, h in manifest_b.items() if p in run_a.manifest}
    narrowed_to = " and ".join(r.id for r, p in ((run_a, partial_a), (run_b, partial_b)) if p)
    return cases_a, manifest_a, cases_b, manifest_b, narrowed_to


def _largest_drop_first(d: CaseDelta) -> tuple[bool, float, float, str, str]:
    return (d.delta is None, d.delta if d.delta is not None else 0.0, d.p_value, d.suite, d.case_id)


def compare_runs(
    store: RunStore, run_a: str, run_b: str, price: PriceLookup | None = None
) -> Comparison:
    """Compare two stored runs (ids or unique prefixes); `price` prices their tokens
    (`Config.price`), else the costs recorded with the samples are used."""
    a, b = store.run(run_a), store.run(run_b)
    return compare_cases(
        a, store.cases(a.id), b, store.cases(b.id), store.usage(a.id), store.usage(b.id), price
    )


@dataclass(frozen=True)
class PooledSummary(PooledRates):
    """The comparison in a few numbers: how many compared cases moved which way, and the
    pass rate pooled over every compared case's content samples."""

    dropped: int
    rose: int
    unchanged: int
    significant_drops: int
    significant_rises: int
    #: Cases whose file changed between the runs: listed apart, not compared.
    changed: int


def passed_before(store: RunStore, comparison: Comparison) -> list[CaseDelta]:
    """The cases both runs fail that passed an earlier scheduled run with the same case
    file: the case is sound, so the cause is something both runs share (the prompt, most
    often), not the migration and not the case."""
    start = min(comparison.a.run.started_at, comparison.b.run.started_at)
    found = []
    for delta in comparison.likely_case_problems:
        for run, record in store.case_history(delta.case_id, delta.suite):
            if (
                run.kind is RunKind.RUN
                and run.against is None
                and run.started_at < start
                and record.case_hash == delta.b.case_hash
                and record.result is CaseOutcome.PASS
            ):
                found.append(delta)
                break
    return found


def pooled_summary(comparison: Comparison) -> PooledSummary:
    deltas = comparison.deltas
    return PooledSummary(
        **dataclasses.asdict(pooled_rates(deltas)),
        dropped=sum(1 for d in deltas if d.delta is not None and d.delta < 0),
        rose=sum(1 for d in deltas if d.delta is not None and d.delta > 0),
        unchanged=sum(1 for d in deltas if not d.delta),
        significant_drops=sum(1 for d in deltas if d.significant_drop),
        significant_rises=sum(1 for d in deltas if d.significant and not d.significant_drop),
        changed=len(comparison.changed),
    )
