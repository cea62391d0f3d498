"""Layer 1 heuristics for degenerate output: token loops and padding.

Both are cheap enough to run on every sample: zlib level 9 on ~1 KB and one
pass over the words.
"""

from __future__ import annotations

import itertools
import zlib

from redline.assertions.base import COST_HEURISTIC, Assertion, Check, Sample, Spec, register
from redline.text.words import words as split_words
from redline.vocabulary.verdicts import AssertionStatus


def compression_ratio(text: str) -> float:
    """Compressed / raw UTF-8 bytes (zlib level 9). Repetitive text scores low; empty is 0."""
    raw = text.encode("utf-8")
    if not raw:
        return 0.0
    size = len(raw)
    compressor = zlib.compressobj(9, zlib.DEFLATED, _window_bits(size), _memory_level(size))
    return len(compressor.compress(raw) + compressor.flush()) / size


def _window_bits(size: int) -> int:
    """The smallest zlib window that still reaches every byte of `size` bytes.

    zlib matches back at most (window - 262) bytes, so for such an input the
    compressed length equals that of the default 32 KB window, while setting up
    the small window costs a third of the time on a typical output.
    """
    bits = 9
    while bits < 15 and (1 << bits) - 262 < size:
        bits += 1
    return bits


def _memory_level(size: int) -> int:
    """The smallest zlib memory level whose buffers give the same length as the default
    (8) for `size` bytes: every symbol fits one block (a block holds up to 2^(level+6)
    symbols, here kept at twice the bytes), and with fewer than 4,096 positions no hash
    chain reaches level 9's search limit, so a smaller hash table finds the same
    matches. Clearing the default's 64 KB hash table was most of the time of a short
    output's check."""
    if size > 2047:
        return 8
    level = 1
    while (1 << (level + 6)) < 2 * size + 2:
        level += 1
    return level


def distinct_n(text: str, n: int = 3) -> float:
    """Unique word n-grams / all n-grams, ignoring case; 1.0 with fewer than n words.

    Words are counted by `redline.text.words` (each CJK/Thai character is a word), so a
    looping Chinese or Thai reply scores as low as a looping English one.
    """
    words = split_words(text.lower())
    total = len(words) - n + 1
    if total < 1:
        return 1.0
    if n == 1:
        return len(set(words)) / total
    if n == 2:
        return len(set(itertools.pairwise(words))) / total
    if n == 3:
        # Spelled out for the default n: ~25% faster than the generic form on ~1 KB
        # outputs (bench/bench_layer1.py), which runs on every sample.
        return len(set(zip(words, words[1:], words[2:], strict=False))) / total
    return len(set(zip(*(words[i:] for i in range(n)), strict=False))) / total


@register("compression-ratio")
class CompressionRatio(Assertion):
    """Minimum zlib compression ratio; 0.35 is a good start (loops fall below 0.25)."""

    cost = COST_HEURISTIC

    def __init__(self, spec: Spec, minimum: float) -> None:
        super().__init__(spec)
        self.threshold = minimum

    @classmethod
    def parse(cls, spec: Spec) -> CompressionRatio | None:
        minimum = spec.number("value")
        return None if minimum is None else cls(spec, minimum)

    def check(self, sample: Sample) -> Check:
        minimum = self.threshold or 0.0
        ratio = compression_ratio(sample.text)
        if ratio >= minimum:
            return Check.ok(f"compression ratio {ratio:.2f} (min {minimum:g})", ratio, minimum)
        if not sample.text:
            # Nothing to compress is not a loop: a cut-off empty output stays `truncated`.
            return Check.fail(f"empty output (min compression ratio {minimum:g})", ratio, minimum)
        return Check(
            AssertionStatus.FAILED,
            f"compression ratio {ratio:.2f} < {minimum:g}: repetitive or degenerate output",
            ratio,
            minimum,
            final=True,
        )


@register("distinct-n")
class DistinctN(Assertion):
    """Minimum share of unique word n-grams (`n`, default 3); 0.70 is a good start."""

    cost = COST_HEURISTIC
    final = True

    def __init__(self, spec: Spec, minimum: float, n: int) -> None:
        super().__init__(spec)
        self.threshold = minimum
        self.n = n

    @classmethod
    def parse(cls, spec: Spec) -> DistinctN | None:
        minimum = spec.number("value")
        n = spec.integer("n")
        if minimum is None or n is None:
            return None
        return cls(spec, minimum, n)

    def check(self, sample: Sample) -> Check:
        minimum = self.threshold or 0.0
        score = distinct_n(sample.text, self.n)
        label = f"distinct-{self.n} {score:.2f}"
        if score >= minimum:
            return Check.ok(f"{label} (min {minimum:g})", score, minimum)
        return Check.fail(f"{label} < {minimum:g}: repeated phrases", score, minimum)
