"""numbers-from: every number, amount, digit date and quoted span of the output is in SOURCE.

A Layer 1 check that needs no model and works in any language: it catches an
invented total, date or quote cheaply and says exactly which one. Written
numbers match by value under both decimal conventions ("Rp180.000" is 180000,
so is "180,000"), and a source may spell small numbers as words (English,
Indonesian, Vietnamese, Chinese digits). It says nothing about claims without
a number or a quote: whether those are supported is `grounded-in`'s question.
"""

from __future__ import annotations

from redline.assertions.base import COST_REGEX, Assertion, Check, Sample, Spec, register
from redline.text.literals import has_literal, ungrounded_literals
from redline.text.sentences import split_sentences
from redline.textsafe import one_line


@register("numbers-from")
class NumbersFrom(Assertion):
    """Every number, amount, digit date and quoted span of the output appears in SOURCE
    (text or file://)."""

    cost = COST_REGEX

    def __init__(self, spec: Spec, source: str) -> None:
        super().__init__(spec)
        self.source = source

    @classmethod
    def parse(cls, spec: Spec) -> NumbersFrom | None:
        source = spec.text("value")
        return None if source is None else cls(spec, source)

    def describe(self) -> str:
        return f"numbers-from {one_line(self.source, 40)!r}"

    def check(self, sample: Sample) -> Check:
        missing = sample.cached(
            f"numbers-from:{id(self)}", lambda s: ungrounded_literals(s.text, self.source)
        )
        if missing:
            listed = "; ".join(
                f"{m.kind} {m.text!r} in {one_line(m.sentence, 80)!r}" for m in missing
            )
            return Check.fail(f"not in the source: {listed}", 0.0, 1.0)
        found = sum(1 for s in split_sentences(sample.text) if has_literal(s))
        if not found:
            return Check.ok("no number, date or quote in the output to check")
        return Check.ok(
            f"every number, date and quote appears in the source ({found} sentence(s) checked)"
        )
