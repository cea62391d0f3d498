"""compression-ratio reads the same as zlib level 9 with its default window, at every length."""

from __future__ import annotations

import random
import zlib

import pytest

from redline.assertions.heuristic import compression_ratio


def _reference(text: str) -> float:
    raw = text.encode("utf-8")
    return len(zlib.compress(raw, 9)) / len(raw)


def _texts() -> list[str]:
    rng = random.Random(14)
    words = [
        "the",
        "answer",
        "is",
        "refund",
        "pesanan",
        "terima",
        "kasih",
        "你好",
        "đồng",
        "total_idr",
        "12500000",
        "{}",
        "ok",
    ]
    texts = []
    window_edges = (1, 3, 40, 249, 250, 251, 762, 763, 1786, 1787, 4000, 16122, 16123, 40000)
    memory_level_edges = (63, 64, 127, 128, 511, 512, 1023, 1024, 2047, 2048)
    for size in window_edges + memory_level_edges:
        loop = ("the answer is " * (size // 14 + 1))[:size]
        prose = " ".join(rng.choice(words) for _ in range(size))[:size]
        texts += [loop, prose]
    return texts


@pytest.mark.parametrize("text", _texts(), ids=lambda t: f"{len(t)}-bytes")
def test_ratio_equals_zlib_level_9_with_the_default_window(text: str) -> None:
    assert compression_ratio(text) == _reference(text)


def test_a_token_loop_still_scores_far_below_prose() -> None:
    assert compression_ratio("the answer is " * 60) < 0.1
    assert compression_ratio("") == 0.0
