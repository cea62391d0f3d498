"""What a set of samples cost in time, tokens and money: the other half of a model migration.

Latency and tokens are read from the samples that got an answer (a transport failure
measures the network and the retries, not the model). Cost is priced from the config's
price table when the model has an entry, so both sides of a comparison are priced on
today's list; without an entry the costs recorded with the samples are used (the local
model records 0), and when neither exists the cost is unknown — never guessed as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from redline.config import Price
from redline.vocabulary.records import SampleRecord, SampleUsage
from redline.vocabulary.verdicts import Verdict


@dataclass(frozen=True)
class Usage:
    """Latency, tokens and cost over some samples of one run."""

    samples: int
    answered: int
    mean_latency_ms: float | None
    p95_latency_ms: float | None
    input_tokens: int
    output_tokens: int
    #: Samples whose token counts are known: the divisor of the per-sample means.
    counted: int
    #: Total US dollars; None when some answered sample has neither a price nor a cost.
    cost: float | None
    #: Of `input_tokens`, those read from and written to the provider's prompt cache.
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def mean_cached_input_tokens(self) -> float | None:
        return self.cached_input_tokens / self.counted if self.counted else None

    @property
    def cached_share(self) -> float | None:
        """The part of the input tokens read from the prompt cache."""
        return self.cached_input_tokens / self.input_tokens if self.input_tokens else None

    @property
    def mean_input_tokens(self) -> float | None:
        return self.input_tokens / self.counted if self.counted else None

    @property
    def mean_output_tokens(self) -> float | None:
        return self.output_tokens / self.counted if self.counted else None

    @property
    def cost_per_1k(self) -> float | None:
        """US dollars per 1,000 calls at this set's mean cost per sample."""
        if self.cost is None or not self.answered:
            return None
        return self.cost / self.answered * 1000


def usd(value: float | None) -> str:
    """US dollars, 'unknown' when no price was known."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0"
    if abs(value) >= 100:
        return f"${value:,.0f}"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    return f"${value:.3g}"


EMPTY = Usage(0, 0, None, None, 0, 0, 0, None)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (`q` in 0..100): always a latency that was measured."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def usage_of(samples: Iterable[SampleUsage], price: Price | None) -> Usage:
    """Sum up `samples`, pricing their tokens with `price` when given."""
    latencies: list[float] = []
    n = answered = counted = tokens_in = tokens_out = cached = written = 0
    cost: float | None = 0.0
    for s in samples:
        n += 1
        if s.verdict is Verdict.TRANSPORT:
            continue
        answered += 1
        if s.latency_ms is not None:
            latencies.append(s.latency_ms)
        if s.input_tokens is not None and s.output_tokens is not None:
            counted += 1
            tokens_in += s.input_tokens
            tokens_out += s.output_tokens
            cached += s.cached_input_tokens or 0
            written += s.cache_write_tokens or 0
        priced = (
            s.cost
            if price is None
            else price.cost(
                s.input_tokens, s.output_tokens, s.cached_input_tokens, s.cache_write_tokens
            )
        )
        cost = None if cost is None or priced is None else cost + priced
    if answered == 0:
        cost = None
    return Usage(
        samples=n,
        answered=answered,
        mean_latency_ms=sum(latencies) / len(latencies) if latencies else None,
        p95_latency_ms=percentile(latencies, 95),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        counted=counted,
        cost=cost,
        cached_input_tokens=cached,
        cache_write_tokens=written,
    )


def usage_summary(u: Usage) -> str:
    """One line for a run summary or report: what it cost, in money, tokens and time."""
    cost = usd(u.cost)
    if u.cost_per_1k is not None:
        cost += f" ({usd(u.cost_per_1k)} per 1,000 calls)"
    latency = "latency unknown"
    if u.mean_latency_ms is not None and u.p95_latency_ms is not None:
        latency = f"latency mean {u.mean_latency_ms:,.0f} ms, p95 {u.p95_latency_ms:,.0f} ms"
    tokens = f"tokens in {u.input_tokens:,} / out {u.output_tokens:,}"
    if u.cached_input_tokens or u.cache_write_tokens:
        tokens += f" (in: {u.cached_input_tokens:,} cached, {u.cache_write_tokens:,} cache-written)"
    return f"cost {cost} · {tokens} · {latency}"


def usage_of_samples(samples: Iterable[SampleRecord], price: Price | None = None) -> Usage:
    """`usage_of` over full sample records (as a report holds them)."""
    return usage_of(
        (
            SampleUsage(
                s.verdict,
                s.latency_ms,
                s.input_tokens,
                s.output_tokens,
                s.cost,
                s.cached_input_tokens,
                s.cache_write_tokens,
            )
            for s in samples
        ),
        price,
    )
