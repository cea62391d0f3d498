"""Concept and tone scores for model outputs, on one embeddings backend.

A concept is compared with every sentence of the output ("query: " concept vs
"passage: " sentence) and the best sentence counts (one- and two-word fragments
only when there is nothing longer); its contrast over the
concept's background floor is calibrated per backend (see calibration.py).
Tone compares sentences with the templates of every tone ("query: " on both
sides, the e5 recipe for symmetric similarity) and needs the requested tone to
lead the runner-up by a margin measured in the backend's calibrated scale.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from redline.casemodel import DEFAULT_TONE_MARGIN
from redline.semantic.calibration import Calibration, concept_floors, load_calibration, shipped_set
from redline.semantic.embeddings import Embeddings, Role, Vectors, load_embeddings
from redline.semantic.settings import SemanticSettings
from redline.semantic.tones import (
    COURTESY_TONES,
    HELPER_GROUPS,
    ToneBook,
    load_tones,
    requestable_tones,
)
from redline.text.sentences import split_sentences

# The default bars (a mention's calibrated score, a tone's lead over the runner-up in units
# of the backend's spread) are declared with the assertion types in the case-file model.
_TOP_TEMPLATES = 2
_SENTENCE_CACHE = 4096


@dataclass(frozen=True)
class ConceptMatch:
    """How strongly the best sentence of an output expresses a concept."""

    concept: str
    sentence: str
    raw: float
    floor: float
    calibrated: float
    backend: str
    #: The output names the concept in its own words (in this sentence): a mention whatever
    #: the embeddings say, including a negation such as "we cannot offer a refund".
    literal: bool = False

    def describe(self) -> str:
        shown = _clip(self.sentence) if self.sentence else "(empty output)"
        if self.literal:
            return f"the output names {self.concept!r} in {shown!r} (a literal mention)"
        return (
            f"best sentence {shown!r}: calibrated {self.calibrated:.2f} "
            f"(raw cosine {self.raw:.3f}, concept floor {self.floor:.3f}, {self.backend})"
        )


@dataclass(frozen=True)
class ToneMatch:
    """Scores of every tone for one output and the requested tone's lead."""

    tone: str
    scores: Mapping[str, float]
    winner: str
    runner_up: str
    #: (requested - best other) / backend spread: positive when the requested tone wins.
    margin: float
    #: The sentence that pulls most toward `winner` (or toward `tone` when it wins).
    sentence: str
    backend: str

    def describe(self) -> str:
        ranked = sorted(self.scores.items(), key=lambda item: -item[1])[:3]
        table = ", ".join(f"{name} {score:.3f}" for name, score in ranked)
        return (
            f"{self.winner} wins (lead {self.margin:+.2f} for {self.tone} over the best other "
            f"tone); top scores: {table}; sentence {_clip(self.sentence)!r} ({self.backend})"
        )


_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _substantial(sentence: str) -> bool:
    """At least three words (or four CJK characters): one- and two-word fragments such as
    "Thanks." embed close to every short concept, so they count only when nothing longer
    is there."""
    return len(_CJK.findall(sentence)) >= 4 or len(_WORD.findall(sentence)) >= 3


@lru_cache(maxsize=1024)
def _names(concept: str) -> re.Pattern[str]:
    """Where a sentence says the concept itself: from a word start (suffixes allowed) for
    spaced scripts, anywhere for CJK/Thai."""
    words = [re.escape(w) for w in concept.split()]
    phrase = r"\s+".join(words)
    if _CJK.search(concept) or re.search("[\u0e00-\u0e7f]", concept):
        return re.compile(phrase, re.IGNORECASE)
    return re.compile(rf"(?<!\w){phrase}", re.IGNORECASE)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SemanticScorer:
    """Scores with one backend, its calibration and the tone templates; safe across threads."""

    def __init__(self, embeddings: Embeddings, calibration: Calibration, tones: ToneBook) -> None:
        self.embeddings = embeddings
        self.calibration = calibration
        self.tones = tones
        self._background = shipped_set().background
        #: Recent sentence vectors by (role, sentence), oldest first.
        self._sentences: OrderedDict[tuple[Role, str], Vectors] = OrderedDict()
        self._floors: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return self.embeddings.name

    def known_tones(self) -> list[str]:
        return requestable_tones(self.tones)

    def sentences(self, text: str, role: Role) -> tuple[list[str], Vectors]:
        """An output's sentences and their vectors."""
        found = split_sentences(text)
        return found, self._vectors(found, role)

    def _vectors(self, sentences: Sequence[str], role: Role) -> Vectors:
        """Vectors of sentences, encoding only those not seen lately: samples of one case
        repeat greetings, closings and whole answers, and several assertions read one output."""
        if not sentences:
            return np.zeros((0, 1), np.float32)
        with self._lock:
            cache = self._sentences
            known = {s: cache[(role, s)] for s in sentences if (role, s) in cache}
        missing = list(dict.fromkeys(s for s in sentences if s not in known))
        if missing:
            known.update(zip(missing, self.embeddings.embed(missing, role), strict=True))
        with self._lock:
            for sentence in dict.fromkeys(sentences):
                self._sentences[(role, sentence)] = known[sentence]
                self._sentences.move_to_end((role, sentence))
            while len(self._sentences) > _SENTENCE_CACHE:
                self._sentences.popitem(last=False)
        return np.stack([known[s] for s in sentences])

    def concept(self, text: str, concept: str) -> ConceptMatch:
        """The best-matching sentence of `text` for `concept`, with raw and calibrated scores.

        A sentence that names the concept in its own words (case-insensitive; "refund" also
        in "refunds") mentions it with score 1.0: embeddings blur negations ("we cannot
        offer a refund" can score low for "refund"), but saying the word is talking about it.
        Such an output needs no encoding at all.
        """
        floor = self._floor(concept)
        found = split_sentences(text)
        named = _names(concept)
        for sentence in found:
            if named.search(sentence):
                return ConceptMatch(concept, sentence, 1.0, floor, 1.0, self.backend, True)
        if not found:
            return ConceptMatch(concept, "", 0.0, floor, 0.0, self.backend)
        # Fragments count only when nothing longer is there, so they are not even encoded.
        candidates = [s for s in found if _substantial(s)] or found
        target = self.embeddings.embed_fixed([concept], "query")[0]
        similarities = self._vectors(candidates, "passage") @ target
        best = int(np.argmax(similarities))
        raw = float(similarities[best])
        return ConceptMatch(
            concept=concept,
            sentence=candidates[best],
            raw=raw,
            floor=floor,
            calibrated=self.calibration.calibrated(raw - floor),
            backend=self.backend,
        )

    def _floor(self, concept: str) -> float:
        with self._lock:
            floor = self._floors.get(concept)
        if floor is None:
            floor = float(concept_floors(self.embeddings, [concept], self._background)[0])
            with self._lock:
                self._floors[concept] = floor
        return floor

    def tone(self, text: str, tone: str) -> ToneMatch:
        """Scores of every requestable tone; `tone` must be one of `known_tones()`."""
        if tone not in self.tones or tone in HELPER_GROUPS:
            known = ", ".join(self.known_tones())
            raise ValueError(f"unknown tone {tone!r} (known: {known})")
        found, vectors = self.sentences(text, "query")
        names = self.known_tones()
        if not found:
            zeros = dict.fromkeys(names, 0.0)
            runner = next(n for n in names if n != tone)
            return ToneMatch(tone, zeros, runner, tone, 0.0, "", self.backend)
        per_sentence = self._group_scores(vectors, names)
        scores = {name: float(per_sentence[name].mean()) for name in names}
        ranked = sorted(names, key=lambda name: -scores[name])
        winner = ranked[0]
        best_other = max(scores[n] for n in names if n != tone)
        margin = (scores[tone] - best_other) / self.calibration.spread
        focus = tone if winner == tone else winner
        sentence = found[int(np.argmax(per_sentence[focus]))]
        return ToneMatch(
            tone=tone,
            scores=scores,
            winner=winner,
            runner_up=ranked[1] if winner == tone else tone,
            margin=margin,
            sentence=sentence,
            backend=self.backend,
        )

    def courtesy(self, sentences: Sequence[str]) -> list[bool]:
        """Which sentences are pure courtesy (greeting, thanks, apology) rather than claims."""
        if not sentences:
            return []
        vectors = self._vectors(sentences, "query")
        names = sorted(self.tones)
        per_sentence = self._group_scores(vectors, names)
        needed = DEFAULT_TONE_MARGIN * self.calibration.spread
        flags = []
        for i in range(len(sentences)):
            polite = max(per_sentence[n][i] for n in names if n in COURTESY_TONES)
            claim = max(per_sentence[n][i] for n in names if n not in COURTESY_TONES)
            flags.append(bool(polite - claim >= needed))
        return flags

    def _group_scores(self, vectors: Vectors, names: Sequence[str]) -> dict[str, Vectors]:
        """Per tone, per sentence: mean of the best few template similarities."""
        out: dict[str, Vectors] = {}
        for name in names:
            templates = self.embeddings.embed_fixed(list(self.tones[name]), "query")
            similarities = vectors @ templates.T
            top = min(_TOP_TEMPLATES, similarities.shape[1])
            out[name] = np.sort(similarities, axis=1)[:, -top:].mean(axis=1)
        return out


_SCORERS: dict[tuple[object, ...], SemanticScorer] = {}
_SCORERS_LOCK = threading.Lock()


def semantic_scorer(settings: SemanticSettings) -> SemanticScorer:
    """The process-wide scorer for these settings; raises BackendUnavailable when it cannot load."""
    key = (*settings.key(), settings.tones)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            embeddings = load_embeddings(settings)
            calibration = load_calibration(embeddings, settings.calibration_cache)
            _SCORERS[key] = SemanticScorer(embeddings, calibration, load_tones(settings.tones))
        return _SCORERS[key]


def forget_scorers() -> None:
    """Drop process-wide scorers (tests that switch or remove backends within one process)."""
    with _SCORERS_LOCK:
        _SCORERS.clear()
