"""Accepted baselines (`baselines/<suite>.json`, committed) and comparison against them.

A baseline keeps, per case, the accepted pass count, the mean score of every scored
assertion, the pinned model id, the case's manifest hash and one golden output.

Golden output rule (deterministic for the same run): among the case's `ok` samples,
the one whose mean token distance to the other `ok` samples is smallest, i.e. the
most typical passing answer. Token distance is 1 − difflib's similarity ratio over
whitespace-separated tokens (the first 2,000 of each output, which bounds the cost on
very long outputs), computed once per pair in sample-index order; ties go to the
lowest sample index. No `ok` sample: no golden output.

Score drop rule: only scored assertions — the semantic ones (`mentions`,
`not-mentions`, `tone`, `grounded-in`) and rubric `judge`s — have a score whose fall
means the answers got worse while still passing. When the assertion's own pass threshold
is known (baselines record it), its mean score dropped when it crossed that threshold,
or moved toward it by strictly more than `score_drop` of its distance from the worst
score (0 for a semantic score that should be high, 1 for `not-mentions`, 1 for a 1–5
judge): in the score's own units, so a `not-mentions` score of 0.099 under a threshold
of 0.5 may rise by 0.09 before it counts, whatever 10% of 0.099 says. Without a known
threshold (baselines written before it was recorded) the relative
change counts, strictly beyond `score_drop`; a baseline mean of 0 then has no relative
change and is not compared. For `not-mentions` lower is better, so a rise counts as the
drop. A budget (`max-*`) or a heuristic minimum (`compression-ratio`, `distinct-n`)
that still passes is not a drop: its pass/fail already counts in the pass rate.

Each case gets exactly one status. A case whose pass rate rose is `improved`, never a
regression, whatever its scores did (they are still listed).
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from redline.casemodel.python_data import answer_of
from redline.errors import BaselineMissing, CaseNotFound, ConfigError, RunNotFinished, UsageError
from redline.running.store import RunStore
from redline.text.words import words
from redline.transcript import answer_text, sample_answer
from redline.vocabulary.records import (
    CaseOutcome,
    CaseRecord,
    RunKind,
    RunRecord,
    RunStatus,
    SampleRecord,
)
from redline.vocabulary.tiers import Tier
from redline.vocabulary.verdicts import CONTENT_VERDICTS, AssertionStatus, Verdict

BASELINE_FORMAT = 1
DEFAULT_SCORE_DROP = 0.10

#: Assertions whose score says how good a passing answer is (see the module docstring).
SCORED_TYPES = frozenset({"mentions", "not-mentions", "tone", "grounded-in", "judge"})
_LOWER_IS_BETTER = frozenset({"not-mentions"})
#: The worst score of each scored type that should be high (semantic scores run 0–1, a
#: judge 1–5); a lower-is-better score's worst is 1.
_WORST_HIGH = {"judge": 1.0}
_EPSILON = 1e-9
_GOLDEN_TOKENS = 2000


@dataclass(frozen=True)
class Golden:
    sample_index: int
    output: str


@dataclass(frozen=True)
class BaselineCase:
    """One case as accepted: what a later run is held against."""

    case_id: str
    run_id: str
    tier: Tier
    samples: int
    passes: int
    required: int
    result: CaseOutcome
    model_id: str
    case_hash: str
    scores: Mapping[str, float] = field(default_factory=dict)
    golden: Golden | None = None
    #: Each scored assertion's pass threshold, where it has one (what a drop is measured to).
    thresholds: Mapping[str, float] = field(default_factory=dict)
    #: Why a person accepted this entry although it lowers the bar or changes the model.
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "tier": str(self.tier),
            "samples": self.samples,
            "passes": self.passes,
            "required": self.required,
            "result": str(self.result),
            "model_id": self.model_id,
            "case_hash": self.case_hash,
            "scores": dict(self.scores),
            "golden": None
            if self.golden is None
            else {"sample_index": self.golden.sample_index, "output": self.golden.output},
        }
        if self.reason:
            data["reason"] = self.reason
        if self.thresholds:
            data["thresholds"] = dict(self.thresholds)
        return data


@dataclass(frozen=True)
class Baseline:
    suite: str
    cases: Mapping[str, BaselineCase]

    def golden(self, case_id: str) -> str | None:
        case = self.cases.get(case_id)
        return None if case is None or case.golden is None else case.golden.output

    def to_json(self) -> str:
        data = {
            "format": BASELINE_FORMAT,
            "suite": self.suite,
            "cases": {cid: c.to_json() for cid, c in self.cases.items()},
        }
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def baseline_path(directory: Path, suite: str) -> Path:
    return directory / f"{suite}.json"


def load_baseline(directory: Path, suite: str) -> Baseline | None:
    """The committed baseline of a suite, None when it has none yet."""
    path = baseline_path(directory, suite)
    if not path.is_file():
        return None
    return parse_baseline(path.read_text(encoding="utf-8"), str(path))


def parse_baseline(text: str, source: str) -> Baseline:
    try:
        data = json.loads(text)
        if data.get("format") != BASELINE_FORMAT:
            raise ValueError(f"unsupported format {data.get('format')!r}")
        cases: dict[str, BaselineCase] = {}
        for cid, c in data["cases"].items():
            golden = c.get("golden")
            cases[cid] = BaselineCase(
                case_id=cid,
                run_id=str(c["run_id"]),
                tier=Tier(c["tier"]),
                samples=int(c["samples"]),
                passes=int(c["passes"]),
                required=int(c["required"]),
                result=CaseOutcome(c["result"]),
                model_id=str(c["model_id"]),
                case_hash=str(c["case_hash"]),
                scores={str(k): float(v) for k, v in c.get("scores", {}).items()},
                golden=None
                if golden is None
                else Golden(int(golden["sample_index"]), str(golden["output"])),
                reason=str(c.get("reason", "")),
                thresholds={str(k): float(v) for k, v in c.get("thresholds", {}).items()},
            )
        return Baseline(suite=str(data["suite"]), cases=cases)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"{source}: not a redline baseline ({exc}); restore it from git or save it again "
            "with `redline baseline save RUN_ID`"
        ) from None


def choose_golden(samples: Sequence[SampleRecord]) -> SampleRecord | None:
    """The most typical `ok` sample (see the module docstring for the exact rule)."""
    ok = sorted((s for s in samples if s.verdict is Verdict.OK), key=lambda s: s.index)
    if len(ok) <= 2:
        return ok[0] if ok else None
    tokens = [words(sample_answer(s))[:_GOLDEN_TOKENS] for s in ok]
    totals = [0.0] * len(ok)
    matcher = difflib.SequenceMatcher(autojunk=False)
    for j in range(len(ok)):
        matcher.set_seq2(tokens[j])
        for i in range(j):
            matcher.set_seq1(tokens[i])
            distance = 1.0 - matcher.ratio()
            totals[i] += distance
            totals[j] += distance
    best = min(range(len(ok)), key=lambda i: (round(totals[i], 12), ok[i].index))
    return ok[best]


def score_key(index: int, assertion_type: str) -> str:
    """How a scored assertion is named in a baseline: its position and type."""
    return f"{index}:{assertion_type}"


def mean_scores(samples: Iterable[SampleRecord]) -> dict[str, float]:
    """Mean score of every scored assertion over the content samples that evaluated it."""
    sums: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        if s.verdict not in CONTENT_VERDICTS:
            continue
        for a in s.assertions:
            if a.score is None or a.status not in (AssertionStatus.PASSED, AssertionStatus.FAILED):
                continue
            sums[score_key(a.index, a.type)].append(float(a.score))
    return {k: round(sum(v) / len(v), 6) for k, v in sorted(sums.items())}


def score_thresholds(samples: Iterable[SampleRecord]) -> dict[str, float]:
    """The pass threshold of every scored assertion that has one, as its results state it."""
    found: dict[str, float] = {}
    for s in samples:
        for a in s.assertions:
            if a.score is not None and a.threshold is not None:
                found.setdefault(score_key(a.index, a.type), float(a.threshold))
    return dict(sorted(found.items()))


def baseline_case(case: CaseRecord, samples: Sequence[SampleRecord]) -> BaselineCase:
    golden = choose_golden(samples)
    return BaselineCase(
        case_id=case.case_id,
        run_id=case.run_id,
        tier=case.tier,
        samples=case.samples,
        passes=case.passes,
        required=case.required,
        result=case.result,
        model_id=case.model_id,
        case_hash=case.case_hash,
        scores=mean_scores(samples),
        golden=None if golden is None else Golden(golden.index, sample_answer(golden)),
        thresholds=score_thresholds(samples),
    )


def is_partial_run(run: RunRecord) -> bool:
    """Whether the run left cases of its suites out (filters, a rerun, missing shards)."""
    if run.kind is RunKind.RERUN:
        return True
    return any(run.args.get(key) for key in ("cases", "case", "tier", "shard", "missing_shards"))


def save_baselines(
    store: RunStore,
    run_id: str,
    directory: Path,
    *,
    case_ids: Sequence[str] = (),
) -> list[Path]:
    """Write `baselines/<suite>.json` for every suite of a finished run.

    With `case_ids`, only those cases are replaced in the existing files (accepting a
    rerun for one case); every other case keeps its accepted entry. The same holds for a
    run that covered only part of its suites (`--case`, `--tier` or `--shard`, a triage
    rerun, a merge with shards missing): the cases it did not run keep their entry. Only
    a full run replaces the file, dropping cases that no longer exist.
    """
    run = store.run(run_id)
    if run.status is not RunStatus.FINISHED:
        raise RunNotFinished(
            f"run {run.id} is {run.status}: only a finished run can become a baseline "
            f"(finish it with `redline run --resume {run.id}`)"
        )
    cases = store.cases(run.id)
    if case_ids:
        known = {c.case_id for c in cases}
        unknown = [c for c in case_ids if c not in known]
        if unknown:
            raise CaseNotFound(
                f"run {run.id} has no case(s) {', '.join(unknown)} (see `redline show {run.id}`)"
            )
        cases = [c for c in cases if c.case_id in set(case_ids)]
    if not cases:
        raise UsageError(f"run {run.id} has no case results to accept")
    samples_by_case: dict[tuple[str, str], list[SampleRecord]] = defaultdict(list)
    for s in store.samples(run.id):
        samples_by_case[(s.suite, s.case_id)].append(s)
    by_suite: dict[str, list[CaseRecord]] = defaultdict(list)
    for c in cases:
        by_suite[c.suite].append(c)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for suite, suite_cases in sorted(by_suite.items()):
        entries: dict[str, BaselineCase] = {}
        if case_ids or is_partial_run(run):
            existing = load_baseline(directory, suite)
            entries.update(existing.cases if existing else {})
        for c in suite_cases:
            entries[c.case_id] = baseline_case(c, samples_by_case[(c.suite, c.case_id)])
        baseline = Baseline(suite=suite, cases=dict(sorted(entries.items())))
        path = baseline_path(directory, suite)
        path.write_text(baseline.to_json(), encoding="utf-8")
        written.append(path)
    return written


class CaseStatus(StrEnum):
    UNCHANGED = "unchanged"
    IMPROVED = "improved"
    REGRESSION = "regression"
    SCORE_DROP = "score drop"
    CASE_CHANGED = "case changed"
    INCONCLUSIVE = "inconclusive"
    NEW = "new"
    REMOVED = "removed"


#: Statuses that fail `redline baseline compare` (exit 1).
REGRESSION_STATUSES = frozenset({CaseStatus.REGRESSION, CaseStatus.SCORE_DROP})


@dataclass(frozen=True)
class ScoreDrop:
    key: str
    baseline: float
    current: float
    relative: float
    #: The assertion's pass threshold when the drop was measured toward it, else None.
    limit: float | None = None

    @property
    def crossed(self) -> bool:
        """The score moved across its threshold: from the passing side to the failing one."""
        if self.limit is None:
            return False
        lower = self.key.split(":", 1)[-1] in _LOWER_IS_BETTER
        if lower:
            return self.baseline < self.limit <= self.current
        return self.current < self.limit <= self.baseline

    def movement(self) -> str:
        """How far it moved: toward (or across) its threshold, else the relative change."""
        if self.limit is None:
            return f"{self.relative:+.1%}"
        where = "across" if self.crossed else "toward"
        relative = f"{self.relative:+.0%}, " if self.baseline else ""
        return f"{relative}{self.current - self.baseline:+.3g} {where} its threshold {self.limit:g}"

    def describe(self, allowed: float) -> str:
        """How it got worse and what the rule allows, in the rule's words."""
        if self.limit is None:
            return f"{self.relative:+.0%}, worse by more than the allowed {allowed:.0%}"
        if self.crossed:
            return self.movement()
        kind = self.key.split(":", 1)[-1]
        return (
            f"{self.movement()}, more than the allowed {_allowed(kind, self.baseline, allowed):.3g}"
        )

    def __str__(self) -> str:
        return f"{self.key} {self.baseline:.4g} → {self.current:.4g} ({self.movement()})"


@dataclass(frozen=True)
class CaseComparison:
    suite: str
    case_id: str
    status: CaseStatus
    baseline: BaselineCase | None
    current: CaseRecord | None
    drops: tuple[ScoreDrop, ...] = ()


@dataclass(frozen=True)
class BaselineComparison:
    run: RunRecord
    cases: tuple[CaseComparison, ...]
    missing_suites: tuple[str, ...]

    @property
    def regressions(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.status in REGRESSION_STATUSES]


def score_drops(
    baseline: Mapping[str, float],
    current: Mapping[str, float],
    threshold: float,
    limits: Mapping[str, float] | None = None,
) -> list[ScoreDrop]:
    """Assertions whose mean score got worse by strictly more than `threshold`: of the
    score's range toward its pass threshold in `limits` (or across it), else relative.
    The score drop rule of this module's docstring; pytest's baselines use it too."""
    drops = []
    for key, base in sorted(baseline.items()):
        kind = key.split(":", 1)[-1]
        if key not in current or kind not in SCORED_TYPES:
            continue
        cur = current[key]
        lower = kind in _LOWER_IS_BETTER
        limit = (limits or {}).get(key)
        change = (cur - base) / abs(base) if base else 0.0
        if limit is not None:
            worse_by = cur - base if lower else base - cur
            drop = ScoreDrop(key, base, cur, change, limit)
            if drop.crossed or worse_by > _allowed(kind, base, threshold) + _EPSILON:
                drops.append(drop)
            continue
        if base == 0:
            continue
        worse = change if lower else -change
        if worse > threshold + _EPSILON:
            drops.append(ScoreDrop(key, base, cur, change))
    return drops


def _allowed(kind: str, base: float, fraction: float) -> float:
    """How far a score may move toward its threshold: `fraction` of its distance from the
    worst score, in the score's own units."""
    if kind in _LOWER_IS_BETTER:
        return fraction * max(0.0, 1.0 - base)
    return fraction * max(0.0, base - _WORST_HIGH.get(kind, 0.0))


def _rate(passes: int, samples: int) -> float | None:
    return passes / samples if samples else None


def _case_status(base: BaselineCase, current: CaseRecord, drops: Sequence[ScoreDrop]) -> CaseStatus:
    if base.case_hash != current.case_hash:
        return CaseStatus.CASE_CHANGED
    if current.result is CaseOutcome.INCONCLUSIVE:
        return CaseStatus.INCONCLUSIVE
    before, now = _rate(base.passes, base.samples), _rate(current.passes, current.samples)
    if before is not None and now is not None and now > before:
        return CaseStatus.IMPROVED
    if base.result is CaseOutcome.PASS and current.result is CaseOutcome.FAIL:
        return CaseStatus.REGRESSION
    if drops:
        return CaseStatus.SCORE_DROP
    if base.result is CaseOutcome.FAIL and current.result is CaseOutcome.PASS:
        return CaseStatus.IMPROVED
    return CaseStatus.UNCHANGED


def compare_with_baselines(
    run: RunRecord,
    cases: Sequence[CaseRecord],
    samples: Sequence[SampleRecord],
    baselines: Mapping[str, Baseline],
    *,
    score_drop: float = DEFAULT_SCORE_DROP,
) -> BaselineComparison:
    """Per case: regression, score drop, case changed, new or removed.

    A run that covered only some cases (see `is_partial_run`) reports no case as removed:
    the baseline cases it did not run were left out, not deleted.
    """
    samples_by_case: dict[tuple[str, str], list[SampleRecord]] = defaultdict(list)
    for s in samples:
        samples_by_case[(s.suite, s.case_id)].append(s)
    suites = sorted({c.suite for c in cases} | set(run.suites))
    partial = is_partial_run(run)
    out: list[CaseComparison] = []
    for suite in suites:
        baseline = baselines.get(suite)
        if baseline is None:
            continue
        current = {c.case_id: c for c in cases if c.suite == suite}
        for cid in sorted(set(current) | set(baseline.cases)):
            base, cur = baseline.cases.get(cid), current.get(cid)
            if base is None and cur is not None:
                out.append(CaseComparison(suite, cid, CaseStatus.NEW, None, cur))
            elif cur is None and base is not None:
                if partial:
                    continue  # not run (`--case`, `--tier`, a shard), not removed
                out.append(CaseComparison(suite, cid, CaseStatus.REMOVED, base, None))
            elif base is not None and cur is not None:
                drops: list[ScoreDrop] = []
                if base.case_hash == cur.case_hash:
                    now = mean_scores(samples_by_case[(suite, cid)])
                    drops = score_drops(base.scores, now, score_drop, base.thresholds)
                status = _case_status(base, cur, drops)
                out.append(CaseComparison(suite, cid, status, base, cur, tuple(drops)))
    missing = tuple(s for s in suites if s not in baselines)
    return BaselineComparison(run=run, cases=tuple(out), missing_suites=missing)


def compare_run_with_baselines(
    store: RunStore, run_id: str, directory: Path, *, score_drop: float = DEFAULT_SCORE_DROP
) -> BaselineComparison:
    run = store.run(run_id)
    cases = store.cases(run.id)
    suites = sorted({c.suite for c in cases} | set(run.suites))
    baselines = {s: b for s in suites if (b := load_baseline(directory, s)) is not None}
    if not baselines:
        raise BaselineMissing(
            f"no baseline in {directory} for suite(s) {', '.join(suites) or '(none)'}; "
            "accept one with `redline baseline save RUN_ID`"
        )
    return compare_with_baselines(
        run, cases, store.samples(run.id), baselines, score_drop=score_drop
    )


def diff_line_kind(line: str) -> str:
    """How a unified-diff line is coloured: note, hunk, added, removed or plain."""
    if line.startswith(("+++", "---", "\\")):
        return "note"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "plain"


def golden_diff(
    golden: str,
    output: str,
    *,
    golden_label: str = "golden",
    output_label: str = "output",
    context: int = 3,
) -> str:
    """Unified diff of a raw output against the golden output; empty when identical.

    Lines are split on newline only, so carriage returns show up as differences; a final
    newline on one side only is said in one note line (as git does), not shown as a lone
    removed empty line. The text is raw model output: escape it before display.
    """
    note = None
    if golden.endswith("\n") != output.endswith("\n"):
        has, lacks = (
            (golden_label, output_label) if golden.endswith("\n") else (output_label, golden_label)
        )
        note = f"\\ {lacks} has no newline at the end ({has} has one)"
        golden, output = golden.removesuffix("\n"), output.removesuffix("\n")
    lines = list(
        difflib.unified_diff(
            golden.split("\n"),
            output.split("\n"),
            fromfile=golden_label,
            tofile=output_label,
            n=context,
            lineterm="",
        )
    )
    if note is not None:
        lines = (lines or [f"--- {golden_label}", f"+++ {output_label}"]) + [note]
    return "\n".join(lines)


@dataclass(frozen=True)
class GoldenReference:
    """The text a sample is diffed against, and where it came from, in words."""

    text: str | None
    source: str

    @property
    def found(self) -> bool:
        return self.text is not None


def golden_answer(golden: str) -> str:
    """A case's `golden:` as an answer reads and is compared: a golden written as the
    assistant's turn(s) in JSON (the call the model should have made) becomes its text and
    calls (`redline.transcript`, call ids left out); any other golden stays verbatim."""
    if not golden.lstrip().startswith(("{", "[")):
        return golden
    try:
        data = json.loads(golden)
    except (json.JSONDecodeError, RecursionError):
        return golden
    turns = data if isinstance(data, list) else [data]
    if not turns or not all(isinstance(m, dict) and m.get("role") for m in turns):
        return golden
    try:
        answer = answer_of(data)
    except ValueError:
        return golden
    return answer_text(answer.text, answer.tool_calls, with_ids=False)


def golden_reference(
    baseline: Baseline | None, case_id: str, case_golden: str | None
) -> GoldenReference:
    """The accepted baseline's golden output when it has one, else the case's own `golden:`.

    Without either, `source` says why there is none and what to do.
    """
    accepted = None if baseline is None else baseline.cases.get(case_id)
    if accepted is not None and accepted.golden is not None:
        return GoldenReference(
            accepted.golden.output,
            f"the accepted baseline's golden output (run {accepted.run_id}, "
            f"sample {accepted.golden.sample_index})",
        )
    own = "the case's own reference answer (`golden:` in its case file)"
    if accepted is None:
        why = "there is no accepted baseline for this case"
    else:
        why = (
            f"the accepted baseline (run {accepted.run_id}, {accepted.passes}/"
            f"{accepted.samples} passed) has no passing sample to keep"
        )
    if case_golden is not None:
        return GoldenReference(golden_answer(case_golden), f"{own}: {why}")
    return GoldenReference(
        None,
        f"No golden output: {why}, and the case has no `golden:` reference answer. "
        "Accept a baseline with a passing sample, or write the expected answer into the "
        "case file as `golden: file://fixtures/<name>.txt`.",
    )


def sample_golden_diff(
    directory: Path, sample: SampleRecord, case_golden: str | None = None
) -> tuple[str | None, GoldenReference]:
    """The diff of one stored sample against its golden reference (None without one)."""
    reference = golden_reference(
        load_baseline(directory, sample.suite), sample.case_id, case_golden
    )
    if reference.text is None:
        return None, reference
    diff = golden_diff(
        reference.text,
        sample_answer(sample),
        golden_label=f"golden ({sample.suite}/{sample.case_id})",
        output_label=f"run {sample.run_id} sample {sample.index} [{sample.verdict}]",
    )
    return diff, reference
