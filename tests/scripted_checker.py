"""A scripted checker model for the loopback server: reads redline's checker prompts and
answers with the structured JSON a real model would send.

Its judgement is deliberately simple and predictable (word lists, word overlap), so tests
know the right answer; it measures redline's plumbing, never a model's accuracy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

_WORD = re.compile(r"\w+")
_NEGATIONS = frozenset({"not", "no", "cannot", "never", "tidak", "bukan", "không", "不", "没有"})
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")


def _block(user: str, head: str) -> str:
    match = re.search(rf"{head}:\n<<<\n(.*?)\n>>>", user, re.S)
    return match.group(1) if match else ""


def _numbered(user: str, head: str) -> list[str]:
    part = user.split(f"{head}:\n", 1)[1] if f"{head}:\n" in user else ""
    items = []
    for line in part.splitlines():
        match = re.match(r"(\d+)\. (.*)", line)
        if match is None:
            break
        items.append(match.group(2))
    return items


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


class ScriptedChecker:
    """`responder` for LoopbackLLMServer: concepts by word lists, entailment and tone by
    word overlap."""

    def __init__(self, synonyms: Mapping[str, Sequence[str]] | None = None) -> None:
        self.synonyms = synonyms or {}
        self.calls = 0

    def __call__(self, system: str, user: str) -> str | None:
        if "Concepts:\n" in user:
            self.calls += 1
            return self._concepts(user)
        if "Sentences:\n" in user:
            self.calls += 1
            return self._entailment(user)
        if "Tones:\n" in user:
            self.calls += 1
            return self._tone(user)
        return None

    def _tone(self, user: str) -> str:
        """The listed tone whose examples share the most words with the text."""
        text = _block(user, "Text")
        words = _words(text)
        best, overlap = "", -1
        for line in _numbered(user, "Tones"):
            name, _, examples = line.partition(" (e.g. ")
            shared = len(_words(examples) & words)
            if shared > overlap:
                best, overlap = name, shared
        first = _SENTENCE.findall(text)
        evidence = first[0].strip() if first else ""
        return json.dumps({"tone": best, "evidence": evidence}, ensure_ascii=False)

    def _concepts(self, user: str) -> str:
        text = user.split("Text:\n<<<\n", 1)[1].rsplit("\n>>>", 1)[0]
        answers = []
        for index, concept in enumerate(_numbered(user, "Concepts"), 1):
            needles = [concept, *self.synonyms.get(concept, ())]
            evidence = ""
            for sentence in _SENTENCE.findall(text):
                if any(n.casefold() in sentence.casefold() for n in needles):
                    evidence = sentence.strip()
                    break
            answers.append({"index": index, "present": bool(evidence), "evidence": evidence})
        return json.dumps({"concepts": answers}, ensure_ascii=False)

    def _entailment(self, user: str) -> str:
        source = _block(user, "Source")
        source_sentences = [s.strip() for s in _SENTENCE.findall(source) if s.strip()]
        known = _words(source)
        answers = []
        for index, sentence in enumerate(_numbered(user, "Sentences"), 1):
            words = _words(sentence)
            span = max(source_sentences, key=lambda s: len(_words(s) & words), default="")
            negated = bool(words & _NEGATIONS) != bool(_words(span) & _NEGATIONS)
            if words - _NEGATIONS <= known and not negated:
                label = "entailed"
            elif (words - _NEGATIONS) <= known:
                label = "contradicted"
            else:
                label, span = "not-in-source", ""
            answers.append({"index": index, "label": label, "source_span": span})
        return json.dumps({"sentences": answers}, ensure_ascii=False)
