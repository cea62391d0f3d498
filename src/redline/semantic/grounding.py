"""grounded-in: is every claim of an output supported by the source?

Two parts. The literal check needs no model: every number, amount and quoted
span in the output must appear in the source (it catches invented totals,
dates and quotes cheaply, in any language). The entailment check asks an NLI
model whether the source entails each sentence. Sentences that are pure
courtesy — greetings, thanks, apologies, offers of help, as the tone
templates classify them — carry no claim and are not required to be entailed;
a sentence with a number or a quote is never treated as courtesy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from redline.semantic.nli import Entailment, NLIBackend
from redline.semantic.scorer import SemanticScorer
from redline.semantic.sentences import split_sentences

_NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,]\d+)*")
_QUOTES = (("“", "”"), ('"', '"'), ("«", "»"), ("「", "」"), ("『", "』"), ("„", "“"))
_QUOTE = re.compile(
    "|".join(f"{re.escape(a)}([^{re.escape(b)}\n]{{3,}}?){re.escape(b)}" for a, b in _QUOTES)
)
_SPACE = re.compile(r"\s+")
#: A claim counts as entailed when the model gives entailment at least this probability.
ENTAILMENT_THRESHOLD = 0.5


def _counting(words: str, start: int = 0, step: int = 1) -> dict[str, int]:
    return {word: start + step * i for i, word in enumerate(words.split())}


#: Number words a source may use where an output writes digits.
_NUMBER_WORDS: dict[str, int] = {
    **_counting(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
    ),
    **_counting("thirty forty fifty sixty seventy eighty ninety", 30, 10),
    **_counting("nol satu dua tiga empat lima enam tujuh delapan sembilan sepuluh"),
    **_counting("không một hai ba bốn năm sáu bảy tám chín mười"),
}
_CJK_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九十")}


@dataclass(frozen=True)
class Literal:
    """A number or quoted span of the output that the source does not contain."""

    kind: str
    text: str
    sentence: str


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str
    courtesy: bool
    entailment: Entailment | None


@dataclass(frozen=True)
class Grounding:
    """Everything grounded-in found; `entailment_error` is set when NLI could not run."""

    literals: tuple[Literal, ...]
    sentences: tuple[SentenceCheck, ...]
    entailment_error: str | None = None
    courtesy_note: str | None = None

    @property
    def not_entailed(self) -> list[SentenceCheck]:
        return [
            s
            for s in self.sentences
            if s.entailment is not None and s.entailment.entailment < ENTAILMENT_THRESHOLD
        ]

    @property
    def weakest(self) -> float | None:
        """The lowest entailment probability over checked sentences (the score)."""
        values = [s.entailment.entailment for s in self.sentences if s.entailment is not None]
        return min(values) if values else None


def number_values(token: str) -> set[Decimal]:
    """Every value a written number can mean: "150.000" is 150000 (id) or 150.0 (en)."""
    values: set[Decimal] = set()
    separators = [c for c in token if c in ".,"]
    groups = re.split(r"[.,]", token)
    kinds = set(separators)
    if not separators:
        values.add(Decimal(token))
    elif len(kinds) == 2:
        decimal_mark = separators[-1]
        head, _, tail = token.rpartition(decimal_mark)
        values.add(Decimal(re.sub(r"[.,]", "", head) + "." + tail))
    else:
        if all(len(g) == 3 for g in groups[1:]):
            values.add(Decimal("".join(groups)))
        if len(separators) == 1:
            values.add(Decimal(token.replace(",", ".")))
    return {v.normalize() for v in values}


def _source_numbers(source: str) -> set[Decimal]:
    found: set[Decimal] = set()
    for token in _NUMBER.findall(source):
        try:
            found |= number_values(token)
        except InvalidOperation:
            continue
    for word in re.findall(r"[^\W\d_]+", source.lower()):
        if word in _NUMBER_WORDS:
            found.add(Decimal(_NUMBER_WORDS[word]))
    for char in source:
        if char in _CJK_DIGITS:
            found.add(Decimal(_CJK_DIGITS[char]))
    return found


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _QUOTE.finditer(text)]


def ungrounded_literals(output: str, source: str) -> list[Literal]:
    """Numbers, amounts and quoted spans of `output` that do not appear in `source`."""
    known_numbers = _source_numbers(source)
    known_text = _normalise(source)
    missing: list[Literal] = []
    for sentence in split_sentences(output):
        for quote in _quoted(sentence):
            if _normalise(quote) not in known_text:
                missing.append(Literal("quote", quote, sentence))
        for token in _NUMBER.findall(sentence):
            try:
                values = number_values(token)
            except InvalidOperation:
                continue
            if not values & known_numbers:
                missing.append(Literal("number", token, sentence))
    return missing


def has_literal(sentence: str) -> bool:
    return bool(_NUMBER.search(sentence) or _quoted(sentence))


def check_grounding(
    output: str,
    source: str,
    *,
    nli: NLIBackend | None,
    scorer: SemanticScorer | None = None,
    nli_error: str | None = None,
    scorer_error: str | None = None,
) -> Grounding:
    """The literal check always; the entailment check when an NLI backend is given."""
    literals = tuple(ungrounded_literals(output, source))
    sentences = split_sentences(output)
    courtesy = [False] * len(sentences)
    note = None
    if scorer is not None:
        flags = scorer.courtesy(sentences)
        courtesy = [flag and not has_literal(s) for flag, s in zip(flags, sentences, strict=True)]
    elif scorer_error:
        note = f"courtesy sentences not recognised ({scorer_error}); every sentence was checked"
    if nli is None:
        checks = tuple(SentenceCheck(s, c, None) for s, c in zip(sentences, courtesy, strict=True))
        return Grounding(literals, checks, nli_error or "no NLI backend", note)
    claims = [s for s, c in zip(sentences, courtesy, strict=True) if not c]
    answers = iter(nli.entailments(source, claims))
    checks = tuple(
        SentenceCheck(s, c, None if c else next(answers))
        for s, c in zip(sentences, courtesy, strict=True)
    )
    return Grounding(literals, checks, None, note)
