"""grounded-in: is every claim of an output entailed by the source?

An entailment backend — a local NLI model, or a pinned chat model asked with
structured output (see checker.py) — answers per sentence. Numbers, dates and
quotes are checked without any model by the separate Layer 1 assertion
`numbers-from`; this check is about claims. Sentences that are pure
courtesy — greetings, thanks, apologies, offers of help, as the tone
templates classify them — carry no claim and are not required to be entailed;
a sentence with a number or a quote is never treated as courtesy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from redline.semantic.nli import Entailment
from redline.semantic.scorer import SemanticScorer
from redline.text.literals import has_literal
from redline.text.sentences import split_sentences

#: A claim counts as entailed when the model gives entailment at least this probability.
ENTAILMENT_THRESHOLD = 0.5


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str
    courtesy: bool
    entailment: Entailment | None


@dataclass(frozen=True)
class Grounding:
    """What grounded-in found: each sentence with its entailment (None for courtesy)."""

    sentences: tuple[SentenceCheck, ...]
    backend: str
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


class Entailer(Protocol):
    """Anything that says, per hypothesis, whether the premise entails it (NLI, a checker model)."""

    @property
    def name(self) -> str: ...

    def entailments(self, premise: str, hypotheses: Sequence[str]) -> list[Entailment]: ...


def check_grounding(
    output: str,
    source: str,
    *,
    entailer: Entailer,
    scorer: SemanticScorer | None = None,
    scorer_error: str | None = None,
) -> Grounding:
    """Ask `entailer` about every sentence of `output` that is not pure courtesy.

    Raises BackendUnavailable when the entailer cannot answer.
    """
    sentences = split_sentences(output)
    courtesy = [False] * len(sentences)
    note = None
    if scorer is not None:
        flags = scorer.courtesy(sentences)
        courtesy = [flag and not has_literal(s) for flag, s in zip(flags, sentences, strict=True)]
    elif scorer_error:
        note = f"courtesy sentences not recognised ({scorer_error}); every sentence was checked"
    claims = [s for s, c in zip(sentences, courtesy, strict=True) if not c]
    answers = iter(entailer.entailments(source, claims) if claims else [])
    checks = tuple(
        SentenceCheck(s, c, None if c else next(answers))
        for s, c in zip(sentences, courtesy, strict=True)
    )
    return Grounding(checks, entailer.name, note)
