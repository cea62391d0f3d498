"""`{{var}}` placeholders in prompts and assertion values."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    """Variable names used in `text`, in order of first use."""
    return list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(text)))


def fill(text: str, values: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` with every known placeholder replaced verbatim, and the names that had no value."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        if name not in missing:
            missing.append(name)
        return match.group(0)

    return _PLACEHOLDER.sub(replace, text), missing
