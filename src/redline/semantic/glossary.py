"""Shipped renderings of support-domain concepts in every calibrated language.

Suites write `mentions: refund` once, in English, for a product that answers in Chinese,
and the small embedding model compares languages noisily. When a concept is a glossary
entry, its renderings are further readings: named in the reply they are a literal
mention ("我们无法退款"), otherwise the reply is read in every rendering, each on its own
pair of languages, beside the concept as written (see scorer.py; measured in
docs/semantic-languages.md). Entries are glossary.json and the concepts of the
calibration split (its groups and distractors), each written once. An entry is found by
any rendering (case and spacing aside); the scorer also reads a concept worded otherwise
("refunds") as the entry its vector is closest to, when close enough (scorer.entry_of).

Some entries have an opposite outcome ("flight on time" for "flight delay"): the
embeddings place a reply of the opposite outcome close to the concept, and a sentence
that reads as the opposite more than as the concept is not a mention of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from types import MappingProxyType

from redline.semantic.calibration import shipped_set


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


class Glossary:
    """Entries (language -> rendering), found by any of their renderings."""

    def __init__(
        self,
        entries: Sequence[Mapping[str, str]],
        opposites: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._by_rendering: dict[tuple[str, str], Mapping[str, str]] = {}
        for entry in entries:
            frozen = MappingProxyType(dict(entry))
            for lang, text in entry.items():
                self._by_rendering.setdefault((lang, _key(text)), frozen)
        self._opposites = {
            _key(english): MappingProxyType(dict(opposite))
            for english, opposite in (opposites or {}).items()
        }

    def __len__(self) -> int:
        return len({id(entry) for entry in self._by_rendering.values()})

    def entry(self, text: str, lang: str | None) -> Mapping[str, str] | None:
        """The entry that renders `text` in `lang` (case and spacing aside), if any."""
        if lang is None:
            return None
        return self._by_rendering.get((lang, _key(text)))

    def texts(self, lang: str) -> list[str]:
        """Every entry's rendering in `lang` (as written in the entry)."""
        return [
            entry[lang]
            for (language, _), entry in self._by_rendering.items()
            if language == lang and lang in entry
        ]

    def opposite(self, text: str, lang: str | None) -> Mapping[str, str] | None:
        """The opposite outcome of the entry that renders `text` in `lang`, if it has one."""
        entry = self.entry(text, lang)
        return None if entry is None else self.opposite_of(entry)

    def opposite_of(self, entry: Mapping[str, str]) -> Mapping[str, str] | None:
        """The opposite outcome of an entry, if it has one."""
        if "en" not in entry:
            return None
        return self._opposites.get(_key(entry["en"]))


@lru_cache(maxsize=1)
def shipped_glossary() -> Glossary:
    raw = resources.files("redline.semantic").joinpath("glossary.json").read_bytes()
    data = json.loads(raw)
    calibration = shipped_set()
    return Glossary(
        [dict(entry) for entry in data["entries"]]
        + [dict(group.concept) for group in calibration.groups]
        + [dict(row) for row in calibration.distractors],
        data["opposites"],
    )
