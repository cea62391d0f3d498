"""Numbers, amounts, digit dates and quoted spans in text, and whether a source has them.

Written numbers match by value under both decimal conventions ("Rp180.000" is 180000,
so is "180,000"), and a source may spell small numbers as words (English, Indonesian,
Vietnamese, Chinese digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from redline.text.sentences import split_sentences

_NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,]\d+)*")
_QUOTES = (("“", "”"), ('"', '"'), ("«", "»"), ("「", "」"), ("『", "』"), ("„", "“"))
_QUOTE = re.compile(
    "|".join(f"{re.escape(a)}([^{re.escape(b)}\n]{{3,}}?){re.escape(b)}" for a, b in _QUOTES)
)
_SPACE = re.compile(r"\s+")


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
