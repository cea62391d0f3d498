"""Layer 2 semantic assertion types: mentions, not-mentions, tone, grounded-in.

They run only on samples that passed Layer 1 (the pipeline orders them by
`layer`). Models load on first use, once per process; when a backend is not
available the result is `unavailable` with the reason, never a pass. Importing
this module only registers the types: it loads no model and needs no extra.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from redline.assertions.base import COST_MODEL, LAYER_2, Assertion, Check, Sample, Spec, register
from redline.casemodel import DEFAULT_MENTION_THRESHOLD, DEFAULT_TONE_MARGIN, assertion_model
from redline.errors import ConfigError
from redline.semantic.embeddings import BackendUnavailable
from redline.semantic.grounding import ENTAILMENT_THRESHOLD, Grounding, check_grounding
from redline.semantic.nli import NLIBackend, load_nli
from redline.semantic.scorer import (
    SemanticScorer,
    semantic_scorer,
)
from redline.semantic.settings import SemanticSettings, semantic_settings
from redline.semantic.tones import load_tones, requestable_tones
from redline.yamlsource import did_you_mean


@lru_cache(maxsize=8)
def _tone_names(extra: Path | None) -> tuple[str, ...]:
    return tuple(requestable_tones(load_tones(extra)))


def _settings(spec: Spec) -> SemanticSettings | None:
    try:
        return semantic_settings(spec.config)
    except ConfigError as exc:
        spec.problem(str(exc), "fix [tool.redline.semantic] in the config file")
        return None


class _Semantic(Assertion):
    layer = LAYER_2
    cost = COST_MODEL

    def __init__(self, spec: Spec, settings: SemanticSettings) -> None:
        super().__init__(spec)
        self.settings = settings

    def scorer(self) -> SemanticScorer:
        return semantic_scorer(self.settings)


class _Concept(_Semantic):
    negated = False

    def __init__(self, spec: Spec, settings: SemanticSettings, concept: str, threshold: float):
        super().__init__(spec, settings)
        self.concept = concept
        self.threshold = threshold

    @classmethod
    def parse(cls, spec: Spec) -> _Concept | None:
        concept = spec.string("value")
        threshold = (
            spec.number("threshold", minimum=0, maximum=1)
            if spec.has("threshold")
            else DEFAULT_MENTION_THRESHOLD
        )
        settings = _settings(spec)
        if concept is not None and not concept.strip():
            spec.problem("the concept is empty", "write what the output should talk about")
            return None
        if concept is None or threshold is None or settings is None:
            return None
        return cls(spec, settings, concept, threshold)

    def check(self, sample: Sample) -> Check:
        try:
            match = self.scorer().concept(sample.text, self.concept)
        except BackendUnavailable as exc:
            return Check.unavailable(f"embeddings unavailable: {exc}")
        threshold = self.threshold if self.threshold is not None else DEFAULT_MENTION_THRESHOLD
        found = match.calibrated >= threshold
        comparison = "≥" if found else "<"
        verb = "mentions" if found else "does not mention"
        reason = (
            f"{verb} {self.concept!r}: {match.describe()} {comparison} threshold {threshold:.2f}"
        )
        return Check.of(found != self.negated, reason, match.calibrated, threshold)


@register("mentions")
class Mentions(_Concept):
    """The output talks about CONCEPT: its best sentence scores at least `threshold` (0-1)."""


@register("not-mentions")
class NotMentions(_Concept):
    """No sentence of the output is about CONCEPT (calibrated score below `threshold`)."""

    negated = True


@register("tone")
class Tone(_Semantic):
    """The output's tone is TONE, leading the runner-up tone by `margin` (backend-scaled)."""

    def __init__(self, spec: Spec, settings: SemanticSettings, tone: str, margin: float) -> None:
        super().__init__(spec, settings)
        self.tone = tone
        self.threshold = margin

    @classmethod
    def parse(cls, spec: Spec) -> Tone | None:
        tone = spec.string("value")
        margin = (
            spec.number("margin", minimum=0, maximum=5)
            if spec.has("margin")
            else DEFAULT_TONE_MARGIN
        )
        settings = _settings(spec)
        if tone is None or margin is None or settings is None:
            return None
        try:
            names = _tone_names(settings.tones)
        except ConfigError as exc:
            spec.problem(str(exc), "fix the tones file named in [tool.redline.semantic]")
            return None
        if tone not in names:
            spec.problem(
                f"unknown tone {tone!r}{did_you_mean(tone, names)}",
                f"known tones: {', '.join(names)}; add more in a tones YAML file",
                "value",
            )
            return None
        return cls(spec, settings, tone, margin)

    def check(self, sample: Sample) -> Check:
        try:
            match = self.scorer().tone(sample.text, self.tone)
        except BackendUnavailable as exc:
            return Check.unavailable(f"embeddings unavailable: {exc}")
        margin = self.threshold if self.threshold is not None else DEFAULT_TONE_MARGIN
        passed = match.winner == self.tone and match.margin >= margin
        verdict = "is" if passed else "is not clearly"
        reason = f"tone {verdict} {self.tone!r} (needs lead ≥ {margin:.2f}): {match.describe()}"
        return Check.of(passed, reason, match.margin, margin)


@register("grounded-in")
class GroundedIn(_Semantic):
    """Every claim of the output is supported by SOURCE (text or file://).

    Numbers, amounts and quoted spans must appear in the source (no model
    needed); every sentence that is not pure courtesy must be entailed by the
    source (NLI). `nli: false` keeps only the literal check.
    """

    def __init__(self, spec: Spec, settings: SemanticSettings, source: str, use_nli: bool) -> None:
        super().__init__(spec, settings)
        self.source = source
        self.use_nli = use_nli

    @classmethod
    def parse(cls, spec: Spec) -> GroundedIn | None:
        source = spec.text("value")
        use_nli = spec.boolean("nli", default=assertion_model("grounded-in").default("nli"))  # type: ignore[union-attr]
        settings = _settings(spec)
        if source is not None and not source.strip():
            spec.problem("the source is empty", "give the text the output must stick to")
            return None
        if source is None or use_nli is None or settings is None:
            return None
        return cls(spec, settings, source, use_nli)

    def describe(self) -> str:
        return f"grounded-in {_short(self.source)!r}"

    def check(self, sample: Sample) -> Check:
        return grounding_check(sample.text, self.source, self.settings, use_nli=self.use_nli)


def _short(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def grounding_check(
    output: str, source: str, settings: SemanticSettings, *, use_nli: bool = True
) -> Check:
    """The grounded-in verdict for one output (shared with `assert_behavior`)."""
    nli: NLIBackend | None = None
    nli_error = "entailment not requested (nli: false)"
    if use_nli:
        try:
            nli = load_nli(settings.nli_model)
        except BackendUnavailable as exc:
            nli_error = str(exc)
    scorer: SemanticScorer | None = None
    scorer_error = None
    if nli is not None:
        try:
            scorer = semantic_scorer(settings)
        except BackendUnavailable as exc:
            scorer_error = str(exc)
    report = check_grounding(
        output, source, nli=nli, scorer=scorer, nli_error=nli_error, scorer_error=scorer_error
    )
    return _grounding_verdict(report, use_nli)


def _grounding_verdict(report: Grounding, use_nli: bool) -> Check:
    if report.literals:
        listed = "; ".join(
            f"{lit.kind} {lit.text!r} in {_short(lit.sentence, 80)!r}" for lit in report.literals
        )
        return Check.fail(f"not in the source: {listed}", 0.0, 1.0)
    if report.entailment_error is not None:
        if not use_nli:
            return Check.ok("every number and quote appears in the source (entailment not checked)")
        return Check.unavailable(
            "every number and quote appears in the source, but entailment could not be "
            f"checked: {report.entailment_error}"
        )
    skipped = sum(1 for s in report.sentences if s.courtesy)
    note = f"; {skipped} courtesy sentence(s) not required to be entailed" if skipped else ""
    if report.courtesy_note:
        note += f"; {report.courtesy_note}"
    weakest = report.weakest
    failing = report.not_entailed
    if failing:
        listed = "; ".join(
            f"{_short(s.sentence, 80)!r} is {s.entailment.label} "
            f"(entailment {s.entailment.entailment:.2f})"
            for s in failing
            if s.entailment is not None
        )
        return Check.fail(
            f"not entailed by the source: {listed}{note}", weakest, ENTAILMENT_THRESHOLD
        )
    if weakest is None:
        return Check.ok(f"no claim to check{note}")
    return Check.ok(
        f"every claim is entailed by the source (weakest entailment {weakest:.2f}){note}",
        weakest,
        ENTAILMENT_THRESHOLD,
    )
