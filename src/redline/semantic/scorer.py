"""Concept and tone scores for model outputs, on one embeddings backend.

A concept is compared with every sentence of the output ("query: " on both sides, so
mentions and tone share the output's vectors) and the best sentence counts (one- and
two-word fragments only when there is nothing longer); its score (language-centred,
hubness-corrected figures of the concept and of its framed reading, combined) is
calibrated per backend and per (concept language, reply language) pair, the reply's
language detected cheaply (see calibration.py, languages.py). A concept the shipped
glossary knows (by name, or worded otherwise but close to an entry) is also read in its
other languages' renderings, and weighed against its opposite outcome when the glossary
ships one (glossary.py). A short concept whose words show no language is given the
calibrated language whose concepts' mean direction is closest.
Tone compares sentences with the templates of every tone ("query: " on both
sides, the e5 recipe for symmetric similarity) and needs the requested tone to
lead the runner-up by a margin measured in the backend's calibrated scale.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from redline.casemodel import DEFAULT_TONE_MARGIN
from redline.semantic import languages
from redline.semantic.calibration import (
    Calibration,
    ConceptSide,
    Evidence,
    PairCalibration,
    load_calibration,
    opposed,
    shipped_set,
    weighed,
)
from redline.semantic.concept import Concept, Rendering
from redline.semantic.embeddings import Embeddings, Role, Vectors, load_embeddings
from redline.semantic.glossary import Glossary, shipped_glossary
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
#: A concept this close to a glossary entry's rendering in its language (language-centred
#: cosine) is that entry in other words. Measured on the shipped entries and wording
#: variants written for the choice (not from a labelled split): distinct entries at most
#: 0.75 apart in English and 0.83 in Indonesian and Vietnamese ("giảm giá" / "giảm giá
#: bán"), rewordings 0.86-0.94 ("refunds", "reset my password", "change of address").
REWORDING_SIMILARITY = 0.85
_SENTENCE_CACHE = 4096


@dataclass(frozen=True)
class ConceptMatch:
    """How strongly the best sentence of an output expresses a concept, and on which
    calibration (language pair) that was decided."""

    concept: str
    sentence: str
    #: Cosine of concept and sentence, and the combined score the pair's threshold is on.
    raw: float
    score: float
    calibrated: float
    backend: str
    #: The output names the concept in its own words (in this sentence): a mention whatever
    #: the embeddings say, including a negation such as "we cannot offer a refund".
    literal: bool = False
    concept_lang: str | None = None
    reply_lang: str | None = None
    #: The calibration that decided it; None when no pair of these languages is calibrated.
    pair: PairCalibration | None = None
    #: False when the reply's language could not be told (then the concept's is assumed).
    reply_detected: bool = True
    #: Languages the backend is calibrated for (named when this pair is not).
    calibrated_languages: tuple[str, ...] = ()
    #: The rendering the case wrote when `concept` is the shipped glossary's rendering of it.
    glossary_of: str | None = None
    #: With `glossary_of`: the entry's rendering the case's words were read as.
    read_as: str | None = None
    #: Further renderings scored on the same sentence, each on its own pair; then
    #: `unopposed` is the weighed mean of this match's own calibrated score and theirs.
    readings: tuple[ConceptMatch, ...] = ()
    #: The mean calibrated score before the opposite outcome was weighed (= `calibrated`
    #: unless the sentence reads as the opposite).
    unopposed: float = 0.0
    #: The glossary's opposite outcome when the sentence reads as it more than as the
    #: concept, and its mean calibrated score; then the score decided on is
    #: min(unopposed, 1 − it).
    opposite: str | None = None
    opposite_calibrated: float | None = None
    #: With `readings`: the calibration's threshold on their weighed mean (0.5 there).
    readings_threshold: float | None = None

    @property
    def decided(self) -> bool:
        """Whether a calibrated threshold (or a literal mention) can decide this match."""
        return self.literal or self.pair is not None

    def languages(self) -> str:
        """`English (en) concept, Chinese (zh) reply`."""
        reply = languages.name(self.reply_lang)
        if not self.reply_detected:
            reply = f"reply language not detected, taken as {reply}"
        else:
            reply = f"{reply} reply"
        return f"{languages.name(self.concept_lang)} concept, {reply}"

    def named(self) -> str:
        """`'退款' (the glossary's rendering of 'refund')`, or the concept as written."""
        if self.glossary_of is None:
            return repr(self.concept)
        if self.read_as is not None:
            return (
                f"{self.concept!r} (the glossary's rendering of {self.read_as!r}, which "
                f"{self.glossary_of!r} reads as)"
            )
        return f"{self.concept!r} (the glossary's rendering of {self.glossary_of!r})"

    def describe(self) -> str:
        shown = _clip(self.sentence) if self.sentence else "(empty output)"
        if self.literal:
            return f"the output names {self.named()} in {shown!r} (a literal mention)"
        if self.pair is None:
            known = ", ".join(languages.name(lang) for lang in self.calibrated_languages)
            return (
                f"{self.languages()}: {self.backend} has no mentions calibration for this "
                f"pair of languages (calibrated for concepts and replies in {known})"
            )
        if not self.readings and self.opposite is None:
            return f"best sentence {shown!r}: calibrated {self.calibrated:.2f} ({self._figures()})"
        told = f"{self.named()} {self.own_calibrated():.2f} ({self._figures()})"
        if self.readings:
            others = ", ".join(
                f"{m.named()} {m.own_calibrated():.2f} (pair {m.pair.key if m.pair else '-'})"
                for m in self.readings
            )
            told = f"mean {self.unopposed:.2f} of {told} counting half, and {others}"
        if self.opposite is not None and self.opposite_calibrated is not None:
            told += (
                f"; it reads more as the opposite outcome {self.opposite!r} (mean "
                f"{self.opposite_calibrated:.2f}, the glossary's), so at most "
                f"{1 - self.opposite_calibrated:.2f}"
            )
        if self.readings_threshold is not None:
            told += f"; threshold {self.readings_threshold:.3f} on the mean is 0.50"
        told = f"calibrated {self.calibrated:.2f}: {told}"
        return f"best sentence {shown!r}: {told}"

    def own_calibrated(self) -> float:
        """This rendering's calibrated score alone (without the other readings')."""
        if self.pair is None:
            return self.calibrated
        return self.pair.calibrated(self.score)

    def _figures(self) -> str:
        assert self.pair is not None
        return (
            f"{self.languages()}, pair {self.pair.key} calibrated at score "
            f"{self.pair.threshold:+.3f}, this sentence {self.score:+.3f}; raw cosine "
            f"{self.raw:.3f}, {self.backend}"
        )


@dataclass(frozen=True)
class ToneMatch:
    """Scores of every tone for one output and the requested tone's lead."""

    tone: str
    scores: Mapping[str, float]
    winner: str
    runner_up: str
    #: (score of `tone` - score of `other`) / `scale`: positive when the requested tone wins.
    #: Computed from the values as shown (4 decimals), so the printed figures add up.
    margin: float
    #: The sentence that pulls most toward `winner` (or toward `tone` when it wins).
    sentence: str
    backend: str
    #: The best tone other than the requested one, and the backend's scale for margins.
    other: str = ""
    scale: float = 1.0

    def describe(self) -> str:
        ranked = sorted(self.scores.items(), key=lambda item: -item[1])[:3]
        table = ", ".join(f"{name} {score:.4f}" for name, score in ranked)
        lead = (
            f"lead {self.margin:+.2f} = ({self.tone} {self.scores[self.tone]:.4f} − "
            f"{self.other} {self.scores[self.other]:.4f}) / {self.scale:.4f}, the backend's "
            "scale"
            if self.other
            else f"lead {self.margin:+.2f}"
        )
        return (
            f"{self.winner} wins ({lead}); top scores: {table}; sentence "
            f"{_clip(self.sentence)!r} ({self.backend})"
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

    def __init__(
        self,
        embeddings: Embeddings,
        calibration: Calibration,
        tones: ToneBook,
        glossary: Glossary | None = None,
    ) -> None:
        self.embeddings = embeddings
        self.calibration = calibration
        self.tones = tones
        #: Shipped renderings that concepts gain in other languages (None: as written only).
        self.glossary = glossary
        self._evidence = Evidence(embeddings, shipped_set(), calibration.centroids)
        self._sides: dict[tuple[tuple[str, ...], str, str], ConceptSide] = {}
        self._glossary_by_lang: dict[str, tuple[list[str], Vectors]] = {}
        #: `entry_of` of each (concept text, language) asked: every sample asks again.
        self._entries: dict[tuple[str, str | None], Mapping[str, str] | None] = {}
        #: Recent sentence vectors by (role, sentence), oldest first.
        self._sentences: OrderedDict[tuple[Role, str], Vectors] = OrderedDict()
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

    def concept(self, text: str, concept: str | Concept) -> ConceptMatch:
        """The best-matching sentence of `text` for `concept`, decided on the calibration of
        (the concept's language, the reply's language).

        A sentence that names any rendering in its own words (case-insensitive; "refund"
        also in "refunds"; the glossary's renderings too) mentions it with score 1.0:
        embeddings blur negations ("we cannot offer a refund" can score low for "refund"),
        but saying the word is talking about it. Such an output needs no encoding at all.
        Otherwise, when the concept has a rendering in the reply's language (written, or
        the glossary's) and the case wrote another first, each sentence is read in every
        rendering (each on its own pair; the first written counts half) and the mean is
        decided on its own calibrated threshold: several noisy readings agree more often
        than one. When it has none, every written rendering is scored and the best
        calibrated score counts. A concept the glossary ships an opposite outcome for is
        weighed against it (see `_scored`).
        """
        wanted = concept if isinstance(concept, Concept) else Concept.of(concept)
        wanted = wanted.settled(self.language_of)
        if self.glossary is not None:
            wanted = wanted.completed(self.glossary, self.entry_of)
        found = split_sentences(text)
        detected = languages.detect(text)
        for rendering in wanted.renderings:
            named = _names(rendering.text)
            for sentence in found:
                if named.search(sentence):
                    return ConceptMatch(
                        rendering.text,
                        sentence,
                        1.0,
                        1.0,
                        1.0,
                        self.backend,
                        literal=True,
                        concept_lang=rendering.lang,
                        reply_lang=detected,
                        glossary_of=rendering.glossary_of,
                        read_as=rendering.read_as,
                    )
        written = [r for r in wanted.renderings if r.glossary_of is None]
        opposite = self._opposite(written)
        own = wanted.in_language(detected)
        if own is not None and own != written[0]:
            reply_lang = str(detected)
            others = [
                r
                for r in wanted.renderings
                if r != written[0] and self.calibration.pair(r.lang, reply_lang) is not None
            ]
            return self._scored(found, [written[0], *others], detected, wanted.texts(), opposite)
        chosen = [own] if own is not None else written
        matches = [self._scored(found, [r], detected, wanted.texts(), opposite) for r in chosen]
        decided = [m for m in matches if m.pair is not None]
        return max(decided, key=lambda m: m.calibrated) if decided else matches[0]

    def language_of(self, text: str) -> str | None:
        """The calibrated language, among those told apart only by their words, whose
        concepts' mean direction is closest to this concept's vector: a short concept
        ("kursi anak", "bonus referral") has no function word to show it, and the small
        vocabulary that guesses otherwise misses most support terms (measured in
        docs/semantic-languages.md)."""
        candidates = [lang for lang in self.calibration.languages if lang in languages.WORDS_ONLY]
        if len(candidates) < 2:
            return None
        vector = self.embeddings.embed_fixed([text], "query")[0]
        means = self.calibration.centroids.concept

        def closeness(lang: str) -> float:
            mean = np.asarray(means[lang], dtype=np.float32)
            return float(vector @ mean) / float(np.linalg.norm(mean) or 1.0)

        return max(candidates, key=closeness)

    def entry_of(self, text: str, lang: str | None) -> Mapping[str, str] | None:
        """The glossary entry `text` is: by its rendering (case and spacing aside), else the
        entry whose rendering in `lang` is at least REWORDING_SIMILARITY close
        (language-centred): "refunds", "cancel my subscription", "change of address" are
        entries worded otherwise (0.86-0.94 from theirs), while two distinct entries sit
        at most 0.83 apart."""
        if self.glossary is None:
            return None
        key = (text, lang)
        with self._lock:
            if key in self._entries:
                return self._entries[key]
        found = self.glossary.entry(text, lang)
        if found is None and lang is not None and lang in self.calibration.centroids.concept:
            found = self._reworded_entry(text, lang)
        with self._lock:
            self._entries[key] = found
        return found

    def _reworded_entry(self, text: str, lang: str) -> Mapping[str, str] | None:
        """The entry whose rendering in `lang` is closest to `text`, when close enough."""
        assert self.glossary is not None
        texts, vectors = self._glossary_vectors(lang)
        if not texts:
            return None
        target = self._evidence.centred(
            self.embeddings.embed_fixed([text], "query"), lang, "concept"
        )[0]
        similarities = vectors @ target
        best = int(np.argmax(similarities))
        if similarities[best] < REWORDING_SIMILARITY:
            return None
        return self.glossary.entry(texts[best], lang)

    def _glossary_vectors(self, lang: str) -> tuple[list[str], Vectors]:
        """The glossary's renderings in `lang` and their language-centred vectors."""
        with self._lock:
            cached = self._glossary_by_lang.get(lang)
        if cached is None:
            assert self.glossary is not None
            texts = self.glossary.texts(lang)
            vectors = (
                self._evidence.centred(self.embeddings.embed_fixed(texts, "query"), lang, "concept")
                if texts
                else np.zeros((0, 1), np.float32)
            )
            cached = (texts, vectors)
            with self._lock:
                self._glossary_by_lang[lang] = cached
        return cached

    def _opposite(self, written: list[Rendering]) -> Mapping[str, str] | None:
        """The glossary's opposite outcome of the concept as written, if it has one."""
        if self.glossary is None:
            return None
        for rendering in written:
            entry = self.entry_of(rendering.text, rendering.lang)
            found = None if entry is None else self.glossary.opposite_of(entry)
            if found is not None:
                return found
        return None

    def _scored(
        self,
        found: list[str],
        renderings: list[Rendering],
        detected: str | None,
        all_texts: list[str],
        opposite: Mapping[str, str] | None = None,
    ) -> ConceptMatch:
        """The best sentence by the weighed mean calibrated score of `renderings` (the
        first counts half, see calibration.weighed), each on its own pair; the first
        rendering's figures lead the match, the others are `readings`. Several renderings'
        mean is placed on the calibration's threshold for it (0.5 there).

        With an `opposite` outcome, a sentence whose mean score for the opposite (its
        renderings in the same languages, on the same pairs) is higher than the concept's
        reads as the opposite: its score becomes at most 1 − the opposite's (below 0.5)."""
        matches = [self._match_base(r, detected) for r in renderings]
        if any(m.pair is None for m in matches) or not found:
            return matches[0]
        pairs = [m.pair for m in matches if m.pair is not None]
        # Fragments count only when nothing longer is there, so they are not even encoded.
        candidates = [s for s in found if _substantial(s)] or found
        vectors = self._vectors(candidates, "query")
        per_rendering = [
            self._per_sentence(vectors, r.text, pair, all_texts)
            for r, pair in zip(renderings, pairs, strict=True)
        ]
        mean = weighed([calibrated for _, _, calibrated in per_rendering])
        decided = mean
        against = None
        flipped: list[str] = []
        if opposite is not None and all(r.lang in opposite for r in renderings):
            flipped = [opposite[str(r.lang)] for r in renderings]
            against = weighed(
                [
                    self._per_sentence(vectors, text, pair, flipped)[2]
                    for text, pair in zip(flipped, pairs, strict=True)
                ]
            )
            decided = opposed(mean, against)
        best = int(np.argmax(decided))
        filled = [
            replace(
                match,
                sentence=candidates[best],
                raw=float(cosines[best]),
                score=float(scores[best]),
                calibrated=float(calibrated[best]),
            )
            for match, (cosines, scores, calibrated) in zip(matches, per_rendering, strict=True)
        ]
        reads_opposite = against is not None and bool(against[best] > mean[best])
        final = float(decided[best])
        if len(renderings) > 1:
            final = self.calibration.readings_calibrated(final)
        return replace(
            filled[0],
            calibrated=final,
            readings=tuple(filled[1:]),
            unopposed=float(mean[best]),
            opposite=" / ".join(flipped) if reads_opposite else None,
            opposite_calibrated=(
                float(against[best]) if reads_opposite and against is not None else None
            ),
            readings_threshold=self.calibration.readings_threshold if len(renderings) > 1 else None,
        )

    def _per_sentence(
        self, vectors: Vectors, text: str, pair: PairCalibration, all_texts: list[str]
    ) -> tuple[Vectors, Vectors, Vectors]:
        """Per sentence: cosine to `text`, its combined score and its calibrated score."""
        target = self.embeddings.embed_fixed([text], "query")[0]
        side = self._side(all_texts, text, pair)
        scores = self.calibration.combination.score(
            self._evidence.figures(vectors, pair.reply_lang, side)
        )
        calibrated = np.array([pair.calibrated(float(v)) for v in scores])
        return vectors @ target, scores, calibrated

    def _match_base(self, rendering: Rendering, detected: str | None) -> ConceptMatch:
        reply_lang = detected if detected is not None else rendering.lang
        return ConceptMatch(
            concept=rendering.text,
            sentence="",
            raw=0.0,
            score=0.0,
            calibrated=0.0,
            backend=self.backend,
            concept_lang=rendering.lang,
            reply_lang=reply_lang,
            pair=self.calibration.pair(rendering.lang, reply_lang),
            reply_detected=detected is not None,
            calibrated_languages=tuple(self.calibration.languages),
            glossary_of=rendering.glossary_of,
            read_as=rendering.read_as,
        )

    def _side(self, texts: list[str], text: str, pair: PairCalibration) -> ConceptSide:
        key = (tuple(texts), text, pair.key)
        with self._lock:
            cached = self._sides.get(key)
        if cached is None:
            ordered = [text, *(t for t in texts if t != text)]
            cached = self._evidence.side(ordered, pair.concept_lang, pair.reply_lang)
            with self._lock:
                self._sides[key] = cached
        return cached

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
        scores = {name: round(float(per_sentence[name].mean()), 4) for name in names}
        ranked = sorted(names, key=lambda name: -scores[name])
        winner = ranked[0]
        other = max((n for n in names if n != tone), key=lambda n: scores[n])
        scale = round(self.calibration.spread, 4)
        margin = (scores[tone] - scores[other]) / scale
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
            other=other,
            scale=scale,
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
            _SCORERS[key] = SemanticScorer(
                embeddings, calibration, load_tones(settings.tones), shipped_glossary()
            )
        return _SCORERS[key]


def forget_scorers() -> None:
    """Drop process-wide scorers (tests that switch or remove backends within one process)."""
    with _SCORERS_LOCK:
        _SCORERS.clear()
