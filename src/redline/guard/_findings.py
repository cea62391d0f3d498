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


@dataclass(frozen=True)
class RangeReport:
    """A range of commits judged commit by commit and as one change (from the commits'
    merge base to the last one: what a pull request shows and a squash merge lands), so a
    prompt change and a loosening split over two commits are refused together."""

    commits: tuple[GuardReport, ...]
    whole: GuardReport | None
    #: Each finding of `whole` → the labels of the commits that made it ("" for none alone).
    made_in: tuple[tuple[Finding, tuple[str, ...]], ...] = ()

    @property
    def blocked(self) -> bool:
        return any(r.blocked for r in self.commits) or bool(self.whole and self.whole.blocked)

    @property
    def split(self) -> bool:
        """Refused as one change although no commit is refused alone."""
        return bool(self.whole and self.whole.blocked) and not any(r.blocked for r in self.commits)

    def commits_of(self, finding: Finding) -> tuple[str, ...]:
        return dict(self.made_in).get(finding, ())


def attribute(
    whole: Iterable[Finding], commits: Iterable[GuardReport]
) -> list[tuple[Finding, tuple[str, ...]]]:
    """Which commits made each finding of the whole range: those holding the same finding,
    else the same kind of change to the same subject and setting (`assert[2]`, a file),
    else to the same subject."""
    reports = list(commits)
    out = []
    for finding in whole:
        for level in range(3):
            found = tuple(
                r.label for r in reports if any(_alike(f, finding, level) for f in r.findings)
            )
            if found:
                break
        out.append((finding, found))
    return out


def _alike(one: Finding, other: Finding, level: int) -> bool:
    """0: the same finding; 1: the same setting of the same subject; 2: the same subject."""
    if level == 0:
        return one == other
    if (one.kind, one.subject) != (other.kind, other.subject):
        return False
    return level == 2 or one.detail.split(" ", 1)[0] == other.detail.split(" ", 1)[0]
