"""What the guard found: each change named as old → new, and what it means for a commit."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """What one finding means for the commit."""

    PROMPT = "prompt"
    LOOSENING = "loosened"
    REWRITE = "review"  # changed code or text: counted as a loosening unless allowed
    BROKEN = "broken"  # a side does not parse: always needs a reviewer
    TIGHTENING = "fine"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    kind: Kind
    subject: str  # "case 0042-amount-suffix", "suite support-reply", "prompt cases/x/p.md"
    detail: str  # "assert[2] max-chars 400 → 800"
    path: str = ""

    def __str__(self) -> str:
        return f"{self.subject}: {self.detail}" if self.detail else self.subject


@dataclass(frozen=True)
class GuardReport:
    """The findings of one commit (or of the index) against its parent."""

    label: str
    findings: tuple[Finding, ...]
    allow_rewrite: bool = False

    @property
    def prompt_changes(self) -> list[Finding]:
        return [f for f in self.findings if f.kind is Kind.PROMPT]

    @property
    def loosenings(self) -> list[Finding]:
        kinds = {Kind.LOOSENING} if self.allow_rewrite else {Kind.LOOSENING, Kind.REWRITE}
        return [f for f in self.findings if f.kind in kinds]

    @property
    def broken(self) -> list[Finding]:
        return [f for f in self.findings if f.kind is Kind.BROKEN]

    @property
    def blocked(self) -> bool:
        """A prompt change and a loosening together, or a file that could not be compared."""
        return bool(self.broken) or bool(self.prompt_changes and self.loosenings)


def directional(subject: str, label: str, a: Any, b: Any, *, higher_is_looser: bool) -> Finding:
    detail = f"{label} {show(a)} → {show(b)}"
    if b is None:
        return Finding(Kind.LOOSENING, subject, detail)
    if a is None:
        return Finding(Kind.TIGHTENING, subject, detail)
    if not is_number(a) or not is_number(b):
        return Finding(Kind.REWRITE, subject, detail + " (changed, review)")
    looser = b > a if higher_is_looser else b < a
    return Finding(Kind.LOOSENING if looser else Kind.TIGHTENING, subject, detail)


def differs(a: Any, b: Any) -> bool:
    if is_number(a) and is_number(b):
        return bool(a != b)
    return json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def show(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return json.dumps(text, ensure_ascii=False)
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[Finding] = set()
    out = []
    for f in findings:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return out
