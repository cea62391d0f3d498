"""Multilingual sentence splitting: semantic checks look at sentences, not whole replies.

One vector for a whole reply blurs a single relevant sentence into the rest, and
NLI is unstable on long hypotheses; so outputs are split first. Latin-script
terminators (. ! ? …) end a sentence only before whitespace (so "3.50" stays
whole, and a few abbreviations such as "e.g." do not end one); CJK terminators
(。！？) end one anywhere. Line breaks and list bullets always separate.
"""

from __future__ import annotations

import re

_LATIN_END = re.compile(r"([.!?…][\"'”’)\]]*)[ \t]+")
_CJK_END = re.compile(r"([。！？][」』”’)）]*)[ \t]*")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s+")
_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Mr|Mrs|Ms|Dr|No|approx)\.$", re.IGNORECASE)
_MAX_CHARS = 400


def split_sentences(text: str) -> list[str]:
    """The non-empty sentences of `text`, stripped, in order."""
    pieces: list[str] = []
    carry = ""
    lines = (_BULLET.sub("", line) for line in text.splitlines())
    marked = (_CJK_END.sub("\\1\n", _LATIN_END.sub("\\1\n", line)) for line in lines)
    for piece in "\n".join(marked).split("\n"):
        piece = piece.strip()
        if not piece:
            continue
        piece = f"{carry} {piece}" if carry else piece
        if _ABBREVIATION_END.search(piece):
            carry = piece
            continue
        carry = ""
        pieces.extend(_wrap(piece))
    if carry:
        pieces.extend(_wrap(carry))
    return pieces


def _wrap(sentence: str) -> list[str]:
    """Very long run-on sentences are cut at clause marks so one clause cannot hide."""
    if len(sentence) <= _MAX_CHARS:
        return [sentence]
    parts = [p.strip() for p in re.split(r"(?<=[;；,，:：])\s*", sentence) if p.strip()]
    out: list[str] = []
    current = ""
    for part in parts:
        if current and len(current) + len(part) + 1 > _MAX_CHARS:
            out.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    if current:
        out.append(current)
    return out
