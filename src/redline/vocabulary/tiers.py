"""What a case promises: the tier a suite or case file names."""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    """Every sample passes (contract), or the pass rate meets a bar (quality)."""

    CONTRACT = "contract"
    QUALITY = "quality"
