"""A concept as a case writes it: one text, or its renderings in several languages.

`value: refund`, `value: [refund, 退款]` or `value: {en: refund, zh: 退款}`. A rendering
written under a language code has that language; any other has the language its words
show (`languages.detect_concept`), and a few words that show none ("kursi anak") are
settled by the scorer on the embeddings (`settled`). A concept the shipped glossary knows
gains the glossary's renderings in the languages the case did not write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from redline.semantic.glossary import Glossary
from redline.semantic.languages import detect_concept, shown

#: Finds the glossary entry a rendering (text, language) is, if any.
EntryOf = Callable[[str, str | None], Mapping[str, str] | None]


@dataclass(frozen=True)
class Rendering:
    text: str
    lang: str | None
    #: Whether the case named the language (`{id: ...}`) rather than redline detecting it.
    declared: bool = False
    #: The rendering the case wrote that the shipped glossary rendered as this one.
    glossary_of: str | None = None
    #: Whether the language is shown (declared, or by script, letters or function words)
    #: rather than guessed from a few words.
    certain: bool = True
    #: With `glossary_of`: the entry's own rendering in the written language, when the
    #: case wrote that entry in other words ("refund" for "refunds").
    read_as: str | None = None


@dataclass(frozen=True)
class Concept:
    renderings: tuple[Rendering, ...]

    @classmethod
    def of(cls, value: str | list[str] | dict[str, str]) -> Concept:
        if isinstance(value, str):
            return cls((_detected(value),))
        if isinstance(value, dict):
            return cls(tuple(Rendering(text, lang, True) for lang, text in value.items()))
        return cls(tuple(_detected(text) for text in value))

    @property
    def label(self) -> str:
        """How a reason names it: `'refund'`, or `'refund' / '退款'`."""
        return " / ".join(repr(r.text) for r in self.renderings)

    def texts(self) -> list[str]:
        return [r.text for r in self.renderings]

    def completed(self, glossary: Glossary, entry_of: EntryOf | None = None) -> Concept:
        """With the glossary's renderings of what the case wrote, in the languages the case
        did not write (after the case's own renderings). `entry_of` finds a rendering's
        entry (default: the glossary's own, case and spacing aside)."""
        find = entry_of or glossary.entry
        have = {r.lang for r in self.renderings}
        added: list[Rendering] = []
        for rendering in self.renderings:
            entry = find(rendering.text, rendering.lang)
            if entry is None:
                continue
            own = entry.get(rendering.lang or "")
            reworded = own is not None and _key(own) != _key(rendering.text)
            read_as = own if reworded else None
            for lang, text in entry.items():
                if lang not in have:
                    have.add(lang)
                    added.append(Rendering(text, lang, glossary_of=rendering.text, read_as=read_as))
        return Concept(self.renderings + tuple(added))

    def settled(self, language_of: Callable[[str], str | None]) -> Concept:
        """With each guessed language replaced by `language_of(text)` where that tells one."""
        renderings = []
        for rendering in self.renderings:
            found = None if rendering.certain else language_of(rendering.text)
            renderings.append(rendering if found is None else replace(rendering, lang=found))
        return Concept(tuple(renderings))

    def in_language(self, lang: str | None) -> Rendering | None:
        """The rendering written in `lang`, if any."""
        return next((r for r in self.renderings if lang is not None and r.lang == lang), None)


def _detected(text: str) -> Rendering:
    return Rendering(text, detect_concept(text), certain=shown(text))


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()
