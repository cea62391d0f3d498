"""Why is this case red? Your prompt change, the model, the case, or noise — from evidence.

The red run is compared with a reference point derived from the run itself
(`redline.deciding.reference`). What changed between the two is read from their manifests and
git; then one change at a time is undone in its own arm, and every arm is sampled in
batches until the comparison is decided or the budget is spent:

- reference prompt on the red run's model (when the prompt or its settings changed);
- red prompt on the reference's model (when the pinned model changed);
- the red configuration again with more samples (its own N is too few to decide anything).

A drop is a one-sided Fisher exact test; "the same rate" is an equivalence test (the
Newcombe interval of the difference inside ±margin). Each look at the data spends part
of the error rate: the earlier looks share half of it, the last look has the other half,
so deciding early never inflates the chance of a wrong conclusion. Every arm is a stored
rerun linked to the red run, never mixed into its counts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from redline.casemodel import SUITE_FILE, prompt_file, suite_name
from redline.config import PROVIDER_TYPES, Config, ModelRef, pinned_models
from redline.deciding.cause_target import (
    Worktrees,
    is_target_suite,
    model_arm_skipped,
    reference_arm_skipped,
    target_changes,
)
from redline.deciding.reference import Reference, find_reference, red_run_commit
from redline.deciding.stats import (
    at_least,
    difference_interval,
    fisher_one_sided,
    smallest_count,
    wilson_interval,
)
from redline.documents.yamlsource import plain_data
from redline.errors import CaseNotFound, GitError, ProblemsError, RedlineError, UsageError
from redline.gitio import (
    Repo,
    export_tree,
    file_at,
    list_files,
    open_repo,
    repo_path,
    work_tree,
)
from redline.running.manifest import CONVERSATION_PART, prompt_key, suite_manifest
from redline.running.store import RunStore, now_iso
from redline.suite.cases import Case, Suite, find_suite_dirs, load_suite
from redline.targets.factory import UNPINNED
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import CaseRecord, RunKind, RunRecord, TriageRecord
from redline.vocabulary.verdicts import Verdict

if TYPE_CHECKING:
    from redline.running.runner import RunProgress

#: A case that clears its bar in fewer runs than this (1 in 50) is failing, not marginal.
MARGINAL_FLOOR = 0.02
#: The smallest default batch: fewer samples per look tell nothing about a rate.
MIN_BATCH = 10
#: "Noise" is never concluded on fewer samples per arm than this (or the budget, if smaller).
NOISE_MIN_SAMPLES = 20
#: Settings that change how each sample is generated: the reference prompt arm takes them too.
_GENERATION_SETTINGS = {"suite max_tokens", "suite temperature"}


class Change(StrEnum):
    PROMPT = "prompt"
    MODEL = "model"
    CASE = "case"
    VARS = "vars"
    SETTINGS = "settings"


class ArmKind(StrEnum):
    REFERENCE_PROMPT = "reference-prompt"
    REFERENCE_MODEL = "reference-model"
    RED = "red-configuration"


@dataclass(frozen=True)
class Settings:
    """How hard to look: samples per arm, batch size, confidence, equivalence margin."""

    budget: int = 40
    #: Samples per arm between looks; default a quarter of the budget, at least 10.
    batch: int | None = None
    confidence: float = 0.95
    margin: float = 0.15
    reference: str | None = None

    def __post_init__(self) -> None:
        if self.budget < 1 or (self.batch is not None and self.batch < 1):
            raise UsageError("the budget and the batch size must be at least 1 sample")
        if not 0.5 <= self.confidence < 1.0:
            raise UsageError("the confidence must be at least 0.5 and below 1 (e.g. 0.95)")
        if not 0.0 < self.margin < 1.0:
            raise UsageError("the margin must be a fraction between 0 and 1 (e.g. 0.2)")

    @property
    def looks(self) -> list[int]:
        """Samples per arm at which the evidence is examined."""
        batch = self.batch or max(MIN_BATCH, math.ceil(self.budget / 4))
        sizes = list(range(min(batch, self.budget), self.budget, batch))
        return [*sizes, self.budget]

    def alpha_at(self, look: int, looks: int) -> float:
        """Error rate spent at one look: half shared by the early looks, half at the last."""
        alpha = 1.0 - self.confidence
        if looks == 1:
            return alpha
        return alpha / 2 if look == looks - 1 else alpha / 2 / (looks - 1)


@dataclass(frozen=True)
class ChangeItem:
    kind: Change
    detail: str


@dataclass(frozen=True)
class ArmCounts:
    """One arm as it stands: what it changes, its stored run, its pass count."""

    kind: ArmKind
    label: str
    model_id: str
    revision: str
    passes: int = 0
    samples: int = 0
    run_id: str | None = None
    skipped: str | None = None

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        return wilson_interval(self.passes, self.samples, confidence)

    @property
    def rate(self) -> float:
        return self.passes / self.samples if self.samples else 0.0

    def to_json(self, confidence: float = 0.95) -> dict[str, Any]:
        low, high = self.interval(confidence)
        return {
            "label": self.label,
            "kind": self.kind.value,
            "passes": self.passes,
            "samples": self.samples,
            "interval": [round(low, 4), round(high, 4)],
            "run_id": self.run_id,
            "model": self.model_id,
            "revision": self.revision,
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArmCounts:
        return cls(
            kind=ArmKind(data["kind"]),
            label=str(data["label"]),
            model_id=str(data.get("model", "")),
            revision=str(data.get("revision", "")),
            passes=int(data["passes"]),
            samples=int(data["samples"]),
            run_id=data.get("run_id"),
            skipped=data.get("skipped"),
        )


@dataclass(frozen=True)
class Bar:
    """The case's bar: `required` of `samples` must pass."""

    samples: int
    required: int

    def clears(self, rate: float) -> float:
        """How often one run at this per-sample rate clears the bar."""
        return at_least(self.samples, self.required, rate)


@dataclass(frozen=True)
class Decision:
    cause: Cause
    p_values: Mapping[str, float]
    why: str = ""


@dataclass(frozen=True)
class Diagnosis:
    """The one conclusion for a red case, with every number it rests on."""

    cause: Cause
    sentence: str
    red_run: str
    suite: str
    case_id: str
    reference: Reference
    changes: tuple[ChangeItem, ...]
    arms: tuple[ArmCounts, ...]
    red: ArmCounts
    bar: Bar
    p_values: Mapping[str, float]
    confidence: float
    margin: float
    more_samples: int | None = None
    notes: tuple[str, ...] = ()
    stopped: bool = False
    budget: int = 0

    @property
    def progress(self) -> float:
        """How much of the sample budget the arms used."""
        sampled = [a for a in self.arms if a.skipped is None]
        if not sampled or not self.budget:
            return 1.0
        return min(1.0, sum(a.samples for a in sampled) / (self.budget * len(sampled)))

    @property
    def change_kinds(self) -> list[str]:
        return list(dict.fromkeys(c.kind.value for c in self.changes))

    def to_json(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "conclusion": self.cause.value,
            "sentence": self.sentence,
            "run_id": self.red_run,
            "suite": self.suite,
            "case": self.case_id,
            "reference": {
                "revision": ref.revision,
                "branch": ref.branch,
                "date": ref.date,
                "reason": ref.reason,
                "run_id": ref.run.id if ref.run is not None else None,
            },
            "changes": self.change_kinds,
            "change_details": [{"kind": c.kind.value, "detail": c.detail} for c in self.changes],
            "red_run": self.red.to_json(self.confidence),
            "arms": [a.to_json(self.confidence) for a in self.arms],
            "bar": {"samples": self.bar.samples, "required": self.bar.required},
            "p_values": {k: round(v, 6) for k, v in self.p_values.items()},
            "confidence": self.confidence,
            "margin": self.margin,
            "more_samples_per_arm": self.more_samples,
            "notes": list(self.notes),
            "stopped": self.stopped,
            "budget": self.budget,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Diagnosis:
        ref = data["reference"]
        return cls(
            cause=Cause(data["conclusion"]),
            sentence=str(data["sentence"]),
            red_run=str(data["run_id"]),
            suite=str(data["suite"]),
            case_id=str(data["case"]),
            reference=Reference(
                revision=str(ref["revision"]),
                branch=ref.get("branch"),
                date=str(ref.get("date", "")),
                reason=str(ref.get("reason", "")),
            ),
            changes=tuple(
                ChangeItem(Change(c["kind"]), str(c["detail"])) for c in data["change_details"]
            ),
            arms=tuple(ArmCounts.from_json(a) for a in data["arms"]),
            red=ArmCounts.from_json(data["red_run"]),
            bar=Bar(int(data["bar"]["samples"]), int(data["bar"]["required"])),
            p_values={str(k): float(v) for k, v in data["p_values"].items()},
            confidence=float(data["confidence"]),
            margin=float(data["margin"]),
            more_samples=data.get("more_samples_per_arm"),
            notes=tuple(data.get("notes", ())),
            stopped=bool(data.get("stopped", False)),
            budget=int(data.get("budget", 0)),
        )


@dataclass(frozen=True)
class CauseProgress:
    """A snapshot while the arms are sampled: every arm's counts so far."""

    arms: tuple[ArmCounts, ...]
    done: int
    total: int
    message: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


ProgressCallback = Callable[[CauseProgress], None]


# -- deciding ---------------------------------------------------------------------------


def decide(
    red: ArmCounts,
    undo: Sequence[ArmCounts],
    bar: Bar,
    alpha: float,
    margin: float,
    model_untested: bool = False,
    min_noise: int = NOISE_MIN_SAMPLES,
) -> Decision:
    """The conclusion the counts support at error rate `alpha`, or UNDECIDED.

    A change is convicted when undoing it raises the pass rate (one-sided Fisher p <
    alpha). The case is at fault when every configuration clears its bar in fewer than
    1 run of 50 even at the top of its interval. Noise needs, for every undone change, a
    one-sided equivalence test (the upper end of the Newcombe interval of "undone minus
    yours") showing that undoing it raises the rate by less than `margin` — so a real
    drop of `margin` or more is never called noise — plus `min_noise` samples in every
    arm and a red configuration that clears its bar in at least 1 run of 50 at the
    bottom of its interval.
    Without a way to run the reference model after a model change, neither "case" nor
    "noise" can be claimed.
    """
    level = 1.0 - 2.0 * alpha
    p_values = {
        u.kind.value: fisher_one_sided(u.passes, u.samples, red.passes, red.samples, "greater")
        for u in undo
    }
    convicted = [u for u in undo if p_values[u.kind.value] < alpha]
    if convicted:
        best = min(convicted, key=lambda u: p_values[u.kind.value])
        cause = Cause.PROMPT if best.kind is ArmKind.REFERENCE_PROMPT else Cause.MODEL
        return Decision(cause, p_values)
    if model_untested:
        return Decision(Cause.UNDECIDED, p_values, "model-untested")

    def clears_high(passes: int, samples: int) -> float:
        return bar.clears(wilson_interval(passes, samples, level)[1])

    def clears_low(passes: int, samples: int) -> float:
        return bar.clears(wilson_interval(passes, samples, level)[0])

    arms = [*undo, red]
    if all(clears_high(a.passes, a.samples) < MARGINAL_FLOOR for a in arms):
        return Decision(Cause.CASE, p_values)
    for u in undo:
        high = difference_interval(u.passes, u.samples, red.passes, red.samples, level)[1]
        p_values[f"{u.kind.value} no better"] = _no_better_p(u, red, margin)
        if not high < margin:
            return Decision(Cause.UNDECIDED, p_values)
    enough = all(a.samples >= min_noise for a in arms)
    if enough and clears_low(red.passes, red.samples) >= MARGINAL_FLOOR:
        return Decision(Cause.NOISE, p_values)
    return Decision(Cause.UNDECIDED, p_values)


def _no_better_p(a: ArmCounts, b: ArmCounts, margin: float) -> float:
    """p of the one-sided test "undoing the change raises the rate by `margin` or more"."""
    lo_alpha, hi_alpha = 1e-6, 0.499
    if not _no_better_at(a, b, margin, hi_alpha):
        return 1.0
    for _ in range(40):
        mid = (lo_alpha + hi_alpha) / 2
        if _no_better_at(a, b, margin, mid):
            hi_alpha = mid
        else:
            lo_alpha = mid
    return hi_alpha


def _no_better_at(a: ArmCounts, b: ArmCounts, margin: float, alpha: float) -> bool:
    high = difference_interval(a.passes, a.samples, b.passes, b.samples, 1.0 - 2.0 * alpha)[1]
    return high < margin


def samples_to_decide(
    red: ArmCounts,
    undo: Sequence[ArmCounts],
    bar: Bar,
    alpha: float,
    margin: float,
    limit: int = 5000,
) -> int | None:
    """Samples per arm at which the observed rates, held fixed, would be decided."""
    current = max([red.samples, *(u.samples for u in undo)], default=0)

    def decided(n: int) -> bool:
        def scaled(arm: ArmCounts) -> ArmCounts:
            return dataclasses.replace(arm, passes=round(arm.rate * n), samples=n)

        result = decide(scaled(red), [scaled(u) for u in undo], bar, alpha, margin)
        return result.cause is not Cause.UNDECIDED

    return smallest_count(decided, current, limit)


# -- what changed -----------------------------------------------------------------------


@dataclass
class _SuiteAt:
    """A suite loaded as it was at a revision, and the model its alias pinned there."""

    suite: Suite
    model_id: str | None
    revision: str | None


def _changes(red: _SuiteAt, ref: _SuiteAt | None, case_id: str) -> list[ChangeItem]:
    if ref is None:
        return [ChangeItem(Change.CASE, "the suite did not exist at the reference")]
    found: list[ChangeItem] = []
    rs, fs = red.suite, ref.suite
    if rs.system_template != fs.system_template:
        found.append(ChangeItem(Change.PROMPT, "system prompt text"))
    if rs.user_template != fs.user_template:
        found.append(ChangeItem(Change.PROMPT, "user prompt template"))
    for name in ("messages", "tools", "tool_choice", "response_format"):
        if getattr(rs, name) != getattr(fs, name):
            found.append(ChangeItem(Change.PROMPT, f"suite {name}"))
    found += [ChangeItem(Change.PROMPT, detail) for detail in target_changes(rs, fs)]
    if red.model_id and ref.model_id and _pinned(red.model_id) != _pinned(ref.model_id):
        found.append(ChangeItem(Change.MODEL, f"{ref.model_id} → {red.model_id}"))
    for name in ("max_tokens", "temperature", "samples", "tier"):
        old, new = getattr(fs, name), getattr(rs, name)
        if old != new:
            found.append(ChangeItem(Change.SETTINGS, f"suite {name}: {old} → {new}"))
    red_case = rs.case(case_id)
    try:
        ref_case = fs.case(case_id)
    except KeyError:
        found.append(ChangeItem(Change.CASE, "the case did not exist at the reference"))
        return found
    found.extend(_case_changes(ref_case, red_case))
    return found


def _case_changes(old: Case, new: Case) -> list[ChangeItem]:
    found: list[ChangeItem] = []
    if old.path.read_bytes() != new.path.read_bytes():
        before, after = _case_spec(old.path), _case_spec(new.path)
        if before.get("vars") != after.get("vars"):
            found.append(ChangeItem(Change.VARS, "the case's vars"))
        # The bar moved, not what is tested: the arms still compare rates, judged at the new bar.
        for key in ("samples", "required"):
            if before.get(key) != after.get(key):
                found.append(
                    ChangeItem(Change.SETTINGS, f"case {key}: {before.get(key)} → {after.get(key)}")
                )
        rest = {"vars", "samples", "required", "provenance"}
        other = sorted(
            k for k in set(before) | set(after) if k not in rest and before.get(k) != after.get(k)
        )
        if other:
            found.append(ChangeItem(Change.CASE, "case file: " + ", ".join(other)))
    old_files = {p.name: p.read_bytes() for p in old.files if p.is_file()}
    new_files = {p.name: p.read_bytes() for p in new.files if p.is_file()}
    for name in sorted(set(old_files) | set(new_files)):
        if old_files.get(name) != new_files.get(name):
            found.append(ChangeItem(Change.VARS, f"fixture {name}"))
    return found


def _case_spec(path: Path) -> dict[str, Any]:
    try:
        data = plain_data(path.read_bytes())
    except ValueError:
        return {"(unreadable)": path.read_bytes()}
    return data if isinstance(data, dict) else {"(not a mapping)": data}


def _pinned(model_id: str) -> str:
    """The pinned id without a local model file's content hash."""
    return model_id.split("@sha256:", 1)[0]


# -- the analysis -----------------------------------------------------------------------


@dataclass
class _Arm:
    kind: ArmKind
    label: str
    suite: Suite
    config: Config
    alias: str
    model_id: str
    revision: str
    run_id: str | None = None
    passes: int = 0
    samples: int = 0
    verdicts: dict[Verdict, int] = field(default_factory=dict)

    def counts(self, live: Mapping[Verdict, int] | None = None) -> ArmCounts:
        passes, samples = self.passes, self.samples
        if live:
            passes += live.get(Verdict.OK, 0)
            samples += sum(
                n for v, n in live.items() if v not in (Verdict.TRUNCATED, Verdict.TRANSPORT)
            )
        return ArmCounts(
            self.kind, self.label, self.model_id, self.revision, passes, samples, self.run_id
        )


class CauseAnalysis:
    """One red case: its reference, what changed, its arms. `run()` samples and decides.

    Blocking (call from a worker thread); holds the suites exported from git in a
    temporary folder until `close()`. Callable per case, so a batch of cases can be queued.
    """

    def __init__(
        self,
        store: RunStore,
        config: Config,
        run: RunRecord,
        case: CaseRecord,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.run_record = run
        self.case = case
        self.settings = settings or Settings()
        self.notes: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="redline-cause-")
        #: A target suite's sides, checked out whole: its code runs as it was.
        self._worktrees = Worktrees(Path(self._tmp.name))
        try:
            self._prepare()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._worktrees.close()
        self._tmp.cleanup()

    def __enter__(self) -> CauseAnalysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- preparation ---------------------------------------------------------------------

    def _prepare(self) -> None:
        run, case = self.run_record, self.case
        if run.kind is RunKind.REPLAY:
            raise UsageError(
                f"run {run.id} is a replay; triage the run it replays ({run.parent_id})"
            )
        with open_repo(self.config.root) as repo:
            red_commit = red_run_commit(repo, run)
            suite_dir = self._suite_dir(repo, red_commit)
            inputs = [suite_dir, *self._config_path(repo)]
            self.red = self._red_suite(repo, suite_dir, red_commit)
            self.reference = find_reference(
                repo,
                self.store,
                run,
                case.suite,
                case.case_id,
                self.settings.reference,
                inputs,
                uncommitted=self.red.revision is None,
            )
            ref = self._suite_at(repo, suite_dir, self.reference.revision, "reference")
        if ref is not None and self.reference.run is not None:
            ref.model_id = self.reference.run.model_id
        try:
            self.red_case = self.red.suite.case(case.case_id)
        except KeyError:
            raise CaseNotFound(
                f"case {case.case_id} is not in suite {case.suite} at the red run's commit "
                f"{red_commit[:12]}; pick a run whose commit has the case"
            ) from None
        self.ref = ref
        self.changes = _changes(self.red, ref, case.case_id)
        self.bar = Bar(self.red_case.samples, self.red_case.required)
        self.arms, self.skipped = self._plan_arms()

    def _suite_dir(self, repo: Repo, red_commit: str) -> str:
        """The suite's folder, relative to the top of the repository."""
        for folder in find_suite_dirs(self.config.suites, []):
            if _suite_name(folder / SUITE_FILE) == self.case.suite:
                return repo_path(repo, folder)
        for path in list_files(repo, red_commit):
            if PurePosixPath(path).name != SUITE_FILE:
                continue
            data = file_at(repo, red_commit, path)
            parent = PurePosixPath(path).parent
            if data is not None and _suite_name_of(data, parent.name) == self.case.suite:
                return parent.as_posix()
        raise UsageError(
            f"suite {self.case.suite} is neither in the configured suites nor at the red run's "
            f"commit {red_commit[:12]}"
        )

    def _red_suite(self, repo: Repo, suite_dir: str, red_commit: str) -> _SuiteAt:
        run = self.run_record
        at_commit = self._suite_at(repo, suite_dir, red_commit, "red")
        if at_commit is None:
            raise UsageError(f"suite {self.case.suite} is missing at commit {red_commit[:12]}")
        at_commit.model_id = run.model_id
        if not run.git_dirty or self._matches_red(at_commit.suite):
            return at_commit
        tree = work_tree_suite(repo, suite_dir, self.config)
        if tree is not None and self._matches_red(tree):
            self.notes.append(
                f"run {run.id} ran on uncommitted files; the working tree still holds them, "
                "so they are used for the red configuration"
            )
            return _SuiteAt(tree, run.model_id, None)
        self.notes.append(
            f"run {run.id} ran on uncommitted files that are gone; its commit "
            f"{red_commit[:12]} stands in for them"
        )
        return at_commit

    def _matches_red(self, suite: Suite) -> bool:
        manifest = self.run_record.manifest
        keys = [prompt_key(suite, part) for part in ("system", "user", CONVERSATION_PART)]
        mine = suite_manifest(suite, self.run_record.model_id)
        return all(manifest.get(k) == mine.get(k) for k in keys)

    def _suite_at(self, repo: Repo, suite_dir: str, rev: str, side: str) -> _SuiteAt | None:
        """The suite as committed at `rev`, exported to a temporary folder; None if absent."""
        spec_bytes = file_at(repo, rev, f"{suite_dir}/{SUITE_FILE}".lstrip("/"))
        if spec_bytes is None:
            return None
        try:
            spec = plain_data(spec_bytes)
        except ValueError:
            spec = None
        if is_target_suite(spec):
            dest = self._worktrees.checkout(repo, rev, side)
        else:
            dest = Path(self._tmp.name) / side
            export_tree(repo, rev, suite_dir, dest / suite_dir)
        for ref in _prompt_refs(spec):
            rel = (PurePosixPath(suite_dir) / ref).as_posix()
            normal = Path(rel).as_posix()
            data = file_at(repo, rev, str(PurePosixPath(*_normalise(normal))))
            if data is not None:
                target = dest / PurePosixPath(*_normalise(normal))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        alias = spec.get("model") if isinstance(spec, dict) else None
        model_id = self._pinned_at(repo, rev, alias) if isinstance(alias, str) else None
        config = self.config
        if isinstance(alias, str) and alias not in config.models:
            config = _with_model(config, alias, model_id or "unknown:unknown")
        try:
            suite = load_suite(dest / suite_dir, config)
        except ProblemsError as exc:
            raise UsageError(
                f"suite {self.case.suite} at {rev[:12]} does not load ({exc}); "
                "pick another reference revision"
            ) from None
        return _SuiteAt(suite, model_id, rev)

    def _config_path(self, repo: Repo) -> list[str]:
        try:
            return [repo_path(repo, self.config.source)]
        except GitError:
            return []

    def _pinned_at(self, repo: Repo, rev: str, alias: str) -> str | None:
        try:
            rel = repo_path(repo, self.config.source)
        except GitError:
            return None
        data = file_at(repo, rev, rel)
        if data is None:
            return None
        try:
            return pinned_models(text=data.decode("utf-8")).get(alias)
        except (ValueError, UnicodeDecodeError):
            return None

    def _plan_arms(self) -> tuple[list[_Arm], list[ArmCounts]]:
        """The arms to draw (the red configuration last) and the arms that cannot be."""
        kinds = {c.kind for c in self.changes}
        red_model = self._callable(self.run_record.model_id)
        if red_model is None:
            raise UsageError(
                f"the red run's model {self.run_record.model_id} is not configured in "
                f"{self.config.source.name} any more; pin it again to rerun the case"
            )
        red_rev = (self.red.revision or "working tree")[:12]
        arms: list[_Arm] = []
        skipped: list[ArmCounts] = []
        if Change.CASE in kinds or Change.VARS in kinds or self.ref is None:
            return arms, skipped
        prompt_changed = Change.PROMPT in kinds or any(
            c.kind is Change.SETTINGS and c.detail.split(":")[0] in _GENERATION_SETTINGS
            for c in self.changes
        )
        target = self.red.suite.target
        no_reference = reference_arm_skipped(target) if target is not None else None
        if prompt_changed and no_reference is not None:
            self.notes.append(no_reference)
            label = f"reference prompt ({self.reference.short}) through {target.label}"  # type: ignore[union-attr]
            skipped.append(
                ArmCounts(
                    ArmKind.REFERENCE_PROMPT,
                    label,
                    self.run_record.model_id,
                    self.reference.revision,
                    skipped=no_reference,
                )
            )
        elif prompt_changed:
            arms.append(self._reference_prompt_arm(self.ref, red_model))
        no_model = model_arm_skipped(target) if target is not None else None
        if Change.MODEL in kinds and self.ref.model_id is not None and no_model is not None:
            self.notes.append(no_model)
            skipped.append(
                ArmCounts(
                    ArmKind.REFERENCE_MODEL,
                    f"your prompt on the reference model {_pinned(self.ref.model_id)}",
                    self.ref.model_id,
                    red_rev,
                    skipped=no_model,
                )
            )
        elif Change.MODEL in kinds and self.ref.model_id is not None:
            arm = self._reference_model_arm(self.ref.model_id, red_rev)
            if isinstance(arm, ArmCounts):
                skipped.append(arm)
            else:
                arms.append(arm)
        arms.append(
            self._arm(
                ArmKind.RED,
                f"your configuration again ({red_rev}, {_pinned(self.run_record.model_id)})",
                self.red.suite,
                red_model,
                self.run_record.model_id,
                red_rev,
            )
        )
        return arms, skipped

    def _reference_prompt_arm(self, ref: _SuiteAt, red_model: ModelRef) -> _Arm:
        """The reference's prompt and generation settings on the red run's model."""
        suite = dataclasses.replace(
            self.red.suite,
            system_template=ref.suite.system_template,
            user_template=ref.suite.user_template,
            prompt_files=ref.suite.prompt_files,
            messages=ref.suite.messages,
            tools=ref.suite.tools,
            tool_choice=ref.suite.tool_choice,
            response_format=ref.suite.response_format,
            max_tokens=ref.suite.max_tokens,
            temperature=ref.suite.temperature,
            target=ref.suite.target,
            template_names=ref.suite.template_names,
        )
        return self._arm(
            ArmKind.REFERENCE_PROMPT,
            f"reference prompt ({self.reference.short}) on {_pinned(self.run_record.model_id)}",
            suite,
            red_model,
            self.run_record.model_id,
            self.reference.revision,
        )

    def _reference_model_arm(self, model_id: str, red_rev: str) -> _Arm | ArmCounts:
        """The red prompt on the reference's model; a skipped arm when it is not configured."""
        label = f"your prompt on the reference model {_pinned(model_id)}"
        model = self._callable(model_id)
        if model is not None:
            return self._arm(
                ArmKind.REFERENCE_MODEL, label, self.red.suite, model, model_id, red_rev
            )
        provider = model_id.split(":", 1)[0]
        reason = (
            f"the reference model {model_id} is not configured any more (no provider "
            f"{provider!r} in {self.config.source.name}), so this arm was skipped"
        )
        self.notes.append(reason)
        return ArmCounts(ArmKind.REFERENCE_MODEL, label, model_id, red_rev, skipped=reason)

    def _arm(
        self,
        kind: ArmKind,
        label: str,
        suite: Suite,
        model: ModelRef,
        model_id: str,
        revision: str,
    ) -> _Arm:
        config = _with_model(self.config, suite.model, f"{model.provider}:{model.name}")
        return _Arm(kind, label, suite, config, suite.model, model_id, revision)

    def _callable(self, model_id: str) -> ModelRef | None:
        pinned = _pinned(model_id)
        if ":" not in pinned:
            return None
        provider, name = pinned.split(":", 1)
        if provider == UNPINNED:
            return ModelRef(alias="", provider=provider, name=name)
        if provider not in self.config.providers and provider not in PROVIDER_TYPES:
            return None
        return ModelRef(alias="", provider=provider, name=name)

    # -- sampling ------------------------------------------------------------------------

    def red_counts(self) -> ArmCounts:
        case = self.case
        return ArmCounts(
            ArmKind.RED,
            f"red run {self.run_record.id}",
            self.run_record.model_id,
            (self.run_record.git_commit or "")[:12],
            case.passes,
            case.content_samples,
            self.run_record.id,
        )

    def current(self) -> tuple[ArmCounts, ...]:
        return (*(a.counts() for a in self.arms), *self.skipped)

    def run(
        self,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Diagnosis:
        """Sample the arms batch by batch until decided or out of budget; store each step.

        When `cancelled()` turns true, sampling stops: the samples finished so far are kept
        (in the arms' stored runs and in the returned diagnosis, marked `stopped`).
        """
        self._store_state("running", 0.0, None)
        if not self.arms:
            diagnosis = self._diagnose(Decision(Cause.CASE_CHANGED, {}), final=True)
            self._store_state(diagnosis.cause.value, 1.0, diagnosis)
            return diagnosis
        total = len(self.arms) * self.settings.budget
        try:
            return self._sample(total, progress, cancelled)
        except BaseException:
            done = sum(a.samples for a in self.arms)
            self._store_state(
                "stopped",
                done / total,
                self._diagnose(Decision(Cause.UNDECIDED, {}), final=False, stopped=True),
            )
            raise

    def _sample(
        self, total: int, progress: ProgressCallback | None, cancelled: Callable[[], bool]
    ) -> Diagnosis:
        looks = self.settings.looks
        decision = Decision(Cause.UNDECIDED, {})
        stopped = False
        final = False
        undecidable = self.skipped and len(self.arms) == 1
        for index, target in enumerate(looks):
            stopped = self._draw(target, total, progress, cancelled)
            if stopped:  # an unplanned look at a partial batch decides nothing
                decision = Decision(Cause.UNDECIDED, {})
                break
            decision = self._decide(self.settings.alpha_at(index, len(looks)))
            # With the old model gone and the prompt unchanged, more samples cannot help.
            final = index == len(looks) - 1 or bool(undecidable)
            done = sum(a.samples for a in self.arms)
            if decision.cause is not Cause.UNDECIDED or final:
                break
            partial = self._diagnose(decision, final=False)
            self._store_state("running", done / total, partial)
        diagnosis = self._diagnose(decision, final=final or stopped, stopped=stopped)
        done = sum(a.samples for a in self.arms)
        if stopped and diagnosis.cause is Cause.UNDECIDED:
            self._store_state("stopped", done / total, diagnosis)
        else:
            self._store_state(diagnosis.cause.value, 1.0, diagnosis)
        if progress is not None:
            progress(CauseProgress(self.current(), done, total, diagnosis.sentence))
        return diagnosis

    def _decide(self, alpha: float) -> Decision:
        red = next(a for a in self.arms if a.kind is ArmKind.RED).counts()
        undo = [a.counts() for a in self.arms if a.kind is not ArmKind.RED]
        untested = bool(self.skipped)
        min_noise = min(NOISE_MIN_SAMPLES, self.settings.budget)
        return decide(red, undo, self.bar, alpha, self.settings.margin, untested, min_noise)

    def _draw(
        self,
        target: int,
        total: int,
        progress: ProgressCallback | None,
        cancelled: Callable[[], bool],
    ) -> bool:
        """Bring every arm to `target` samples; True when cancelled."""
        live: dict[ArmKind, Mapping[Verdict, int]] = {}

        def report(arm: _Arm) -> Callable[[RunProgress], None]:
            def on_progress(p: RunProgress) -> None:
                arm.run_id = p.run_id
                live[arm.kind] = p.verdicts
                if progress is not None:
                    counts = tuple(a.counts(live.get(a.kind)) for a in self.arms)
                    done = sum(a.samples + sum(live.get(a.kind, {}).values()) for a in self.arms)
                    progress(CauseProgress((*counts, *self.skipped), done, total))

            return on_progress

        async def main() -> bool:
            task = asyncio.gather(*(self._draw_arm(a, target, report(a)) for a in self.arms))
            while not task.done():
                if cancelled():
                    task.cancel()
                    break
                await asyncio.wait({task}, timeout=0.1)
            try:
                await task
            except asyncio.CancelledError:
                return True
            return False

        try:
            stopped = asyncio.run(main())
        finally:
            self._refresh()
        return stopped

    async def _draw_arm(
        self, arm: _Arm, target: int, on_progress: Callable[[RunProgress], None]
    ) -> None:
        """Run (or extend) the arm's rerun of the case up to `target` samples."""
        from redline.running.runner import RunOptions, execute_run

        if arm.samples >= target and arm.run_id is not None:
            return
        options = RunOptions(
            samples=target,
            case_ids=(self.case.case_id,),
            kind=RunKind.RERUN,
            parent_id=self.run_record.id,
            model_alias=arm.alias,
            resume=arm.run_id,
            extend=arm.run_id is not None,
            budget=self.config.max_run_cost,
            args={
                "triage": True,
                "arm": arm.kind.value,
                "label": arm.label,
                "revision": arm.revision,
                "case": self.case.case_id,
            },
        )
        await execute_run([arm.suite], arm.config, self.store, options, on_progress)

    def _refresh(self) -> None:
        for arm in self.arms:
            if arm.run_id is None:
                continue
            record = self.store.case(arm.run_id, self.case.suite, self.case.case_id)
            if record is not None:
                arm.passes = record.passes
                arm.samples = record.content_samples
                arm.verdicts = dict(record.verdicts)

    def _diagnose(self, decision: Decision, *, final: bool, stopped: bool = False) -> Diagnosis:
        arms = self.current()
        red = next((a for a in arms if a.kind is ArmKind.RED), self.red_counts())
        undo = [a for a in arms if a.kind is not ArmKind.RED and a.skipped is None]
        more = None
        empty = any(a.samples == 0 for a in (red, *undo))
        if (
            decision.cause is Cause.UNDECIDED
            and final
            and decision.why != "model-untested"
            and not empty
        ):
            looks = self.settings.looks
            alpha = self.settings.alpha_at(len(looks) - 1, len(looks))
            needed = samples_to_decide(red, undo, self.bar, alpha, self.settings.margin)
            current = max(a.samples for a in (red, *undo))
            more = None if needed is None else max(0, needed - current)
        diagnosis = Diagnosis(
            cause=decision.cause,
            sentence="",
            red_run=self.run_record.id,
            suite=self.case.suite,
            case_id=self.case.case_id,
            reference=self.reference,
            changes=tuple(self.changes),
            arms=arms,
            red=self.red_counts(),
            bar=self.bar,
            p_values=dict(decision.p_values),
            confidence=self.settings.confidence,
            margin=self.settings.margin,
            more_samples=more,
            notes=tuple(self.notes),
            stopped=stopped,
            budget=self.settings.budget,
        )
        return dataclasses.replace(diagnosis, sentence=explain(diagnosis, decision.why))

    def _store_state(self, state: str, fraction: float, diagnosis: Diagnosis | None) -> None:
        detail: dict[str, Any] = {}
        if diagnosis is not None:
            detail = diagnosis.to_json()
        self.store.put_triage(
            TriageRecord(
                run_id=self.run_record.id,
                suite=self.case.suite,
                case_id=self.case.case_id,
                state=state,
                progress=fraction,
                detail=detail,
                updated_at=now_iso(),
            )
        )


def p_value_label(key: str) -> str:
    """What a p-value of a diagnosis tests, in words."""
    names = {
        ArmKind.REFERENCE_PROMPT.value: "reference prompt",
        ArmKind.REFERENCE_MODEL.value: "reference model",
    }
    arm, _, test = key.partition(" ")
    name = names.get(arm, arm)
    if test == "no better":
        return f"{name} no better than yours by the margin (one-sided equivalence)"
    return f"{name} passes more often than yours (one-sided Fisher)"


def explain(d: Diagnosis, why: str = "") -> str:
    """The conclusion in one or two plain sentences, with its numbers."""
    arms = {a.kind: a for a in d.arms}
    red = arms.get(ArmKind.RED)
    if d.cause is Cause.CASE_CHANGED:
        what = "; ".join(c.detail for c in d.changes if c.kind in (Change.CASE, Change.VARS))
        return (
            f"The case changed since the reference ({what}): nothing was compared. "
            "A changed case is not a regression; judge the new case on its own runs."
        )
    if d.cause is Cause.PROMPT and red is not None:
        ref = arms[ArmKind.REFERENCE_PROMPT]
        kinds = {c.kind for c in d.changes}
        settings = "; ".join(
            c.detail for c in d.changes if c.detail.split(":")[0] in _GENERATION_SETTINGS
        )
        what = "prompt change" if Change.PROMPT in kinds else f"settings change ({settings})"
        return (
            f"Your {what} regressed it: the reference prompt and settings pass {_rate(d, ref)} "
            f"on the same model, yours {_rate(d, red)}{_p(d, ArmKind.REFERENCE_PROMPT)}."
        )
    if d.cause is Cause.MODEL and red is not None:
        ref = arms[ArmKind.REFERENCE_MODEL]
        return (
            f"The model change regressed it: your prompt passes {_rate(d, ref)} on the "
            f"reference model {_pinned(ref.model_id)}, {_rate(d, red)} on "
            f"{_pinned(red.model_id)}{_p(d, ArmKind.REFERENCE_MODEL)}."
        )
    if d.cause is Cause.CASE and red is not None:
        return _explain_case_at_fault(d, red)
    if d.cause is Cause.NOISE and red is not None:
        return _explain_noise(d, red)
    return _explain_undecided(d, why)


def _rate(d: Diagnosis, a: ArmCounts) -> str:
    low, high = a.interval(d.confidence)
    return f"{a.passes}/{a.samples} ({low:.0%}–{high:.0%})"


def _p(d: Diagnosis, kind: ArmKind) -> str:
    value = d.p_values.get(kind.value)
    return "" if value is None else f", one-sided Fisher p = {value:.3g}"


def _explain_case_at_fault(d: Diagnosis, red: ArmCounts) -> str:
    others = [a for a in d.arms if a.kind is not ArmKind.RED and a.skipped is None]
    where = " and ".join(f"{a.label}: {_rate(d, a)}" for a in others)
    lead = (
        f"It fails on the reference configuration too ({where}; yours {_rate(d, red)})"
        if others
        else f"Nothing changed since the reference that could explain it, and it fails "
        f"again: {_rate(d, red)}"
    )
    return (
        f"{lead}, far below its bar of {d.bar.required}/{d.bar.samples}: the case or its "
        "assertion is at fault, not your change."
        + (
            ""
            if others
            else " (If the model behind the same id changed, that is drift: read the outputs.)"
        )
    )


def _explain_noise(d: Diagnosis, red: ArmCounts) -> str:
    shown = "; ".join(f"{a.label}: {_rate(d, a)}" for a in d.arms if a.skipped is None)
    undone = "undoing the change raises the rate by less than " if len(d.arms) > 1 else ""
    same = f"; {undone}{d.margin * 100:.0f} points" if undone else ""
    clears = d.bar.clears(red.rate)
    lead = f"Noise: the rates are indistinguishable ({shown}{same}). "
    at = f"at {red.rate:.0%} per sample it clears its bar of {d.bar.required}/{d.bar.samples}"
    if clears >= 0.9:
        return f"{lead}The red run was a rare miss: {at} in about {clears:.0%} of runs."
    return (
        f"{lead}The case is marginal: {at} in about {clears:.0%} of runs. "
        "Raise its samples or retire it."
    )


def _explain_undecided(d: Diagnosis, why: str) -> str:
    if d.stopped:
        done = ", ".join(f"{a.label}: {_rate(d, a)}" for a in d.arms if a.skipped is None)
        return f"Stopped before a decision; the samples so far are kept ({done})."
    if why == "model-untested":
        return (
            "Undecided: the pinned model changed and the reference model cannot be run here, "
            "so the model cannot be ruled out; configure its provider again to decide."
        )
    if any(a.samples == 0 for a in d.arms if a.skipped is None):
        return (
            "Undecided: an arm has no content sample (every answer was a transport failure or "
            "cut off); check the provider and run it again."
        )
    per_arm = max((a.samples for a in d.arms if a.skipped is None), default=0)
    if d.more_samples is None:
        more = "more samples at these rates would not decide it (they sit on the margin)"
    else:
        more = f"about {d.more_samples} more samples per arm would decide it"
    return f"Undecided after {per_arm} samples per arm: {more}."


def analyse(
    store: RunStore,
    config: Config,
    run: RunRecord,
    case: CaseRecord,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Diagnosis:
    """Find the cause of one red case (blocking): reference, changes, arms, conclusion."""
    with CauseAnalysis(store, config, run, case, settings) as analysis:
        return analysis.run(progress, cancelled)


def work_tree_suite(repo: Repo, suite_dir: str, config: Config) -> Suite | None:
    path = work_tree(repo) / suite_dir
    try:
        return load_suite(path, config)
    except RedlineError:
        return None


def _with_model(config: Config, alias: str, model_id: str) -> Config:
    provider, _, name = _pinned(model_id).partition(":")
    models = {**config.models, alias: ModelRef(alias=alias, provider=provider, name=name)}
    return dataclasses.replace(config, models=models)


def _prompt_refs(spec: object) -> list[str]:
    if not isinstance(spec, dict) or not isinstance(spec.get("prompt"), dict):
        return []
    refs = (prompt_file(str(k), v) for k, v in spec["prompt"].items() if isinstance(v, str))
    return [ref for ref in refs if ref is not None]


def _normalise(path: str) -> list[str]:
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return parts


def _suite_name(path: Path) -> str | None:
    try:
        return _suite_name_of(path.read_bytes(), path.parent.name)
    except OSError:
        return None


def _suite_name_of(data: bytes, folder: str) -> str:
    try:
        return suite_name(plain_data(data), folder)
    except ValueError:
        return folder


__all__ = [
    "ArmCounts",
    "ArmKind",
    "Bar",
    "Cause",
    "CauseAnalysis",
    "CauseProgress",
    "Change",
    "ChangeItem",
    "Diagnosis",
    "Settings",
    "analyse",
    "decide",
    "explain",
    "p_value_label",
    "samples_to_decide",
]
