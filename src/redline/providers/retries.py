"""When to try a request again, and how long to wait first."""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass

from redline.config import ProviderConfig


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped; `max_retries` retries after the first try."""

    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    @classmethod
    def from_config(cls, config: ProviderConfig) -> RetryPolicy:
        return cls(
            max_retries=max(0, config.max_retries),
            backoff_base_s=max(0.0, config.backoff_base_s),
            backoff_max_s=max(0.0, config.backoff_max_s),
        )

    def backoff_s(self, retry: int, rng: random.Random) -> float:
        """Wait before retry `retry` (1-based): uniform in [0, min(max, base·2^(retry-1))]."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** max(0, retry - 1))
        return rng.uniform(0.0, ceiling)

    def retry_after_s(self, header: str | None, now: float | None = None) -> float | None:
        """The server's Retry-After in seconds, capped by `backoff_max_s`; None if absent."""
        seconds = parse_retry_after(header, now)
        return None if seconds is None else min(seconds, self.backoff_max_s)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date (RFC 9110)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)
