"""What the guard found: each change named as old → new, and what it means for a commit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What one finding means for the commit."""

    PROMPT = "prompt"
    LOOSENING = "loosened"
    REWRITE = "review"  # changed code or text: counted as a loosening unless allowed
    BROKEN = "broken"  # a side does not parse: always needs a reviewer
    TIGHTENING = "fine"  # only an edit shown to ask at least as much as before
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    kind: Kind
    subject: str  # "case 0042-amount-suffix", "suite support-reply", "prompt cases/x/p.md"
    detail: str  # "assert[2] max-chars 400 → 800"
    path: str = ""
    line: int = 0

    @property
    def where(self) -> str:
        """`file:line` of the finding (the file alone when the line is unknown)."""
        return f"{self.path}:{self.line}" if self.path and self.line else self.path

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


def unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[Finding] = set()
    out = []
    for f in findings:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return out
