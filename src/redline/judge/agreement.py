"""Cohen's kappa between a person's labels and a judge's answers.

Kappa is the scale that docs/rules.md: The judge is an instrument that needs a scale
asks for.

Raw agreement flatters a judge: on a sample where 90% of outputs pass, a judge
that says "pass" to everything agrees 90% of the time and has measured
nothing. Kappa subtracts the agreement expected by chance and scores it 0.
When chance agreement is 1 (both sides used one class only) kappa is
undefined, and this says so instead of returning NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PASS = "pass"
FAIL = "fail"
LABELS: tuple[str, ...] = (PASS, FAIL)


@dataclass(frozen=True)
class Agreement:
    """Agreement between labels (rows) and judge answers (columns) over the same outputs."""

    n: int
    observed: float | None
    chance: float | None
    kappa: float | None
    #: confusion[label][judge] = count
    confusion: Mapping[str, Mapping[str, int]]

    @property
    def undefined_reason(self) -> str | None:
        """Why kappa is undefined, or None when it is a number."""
        if self.n == 0:
            return "no labelled outputs"
        if self.kappa is None:
            return (
                "kappa is undefined: chance agreement is 1 (labels and judge each used "
                "a single class), so agreement beyond chance cannot be measured"
            )
        return None

    def count(self, label: str, judge: str) -> int:
        return self.confusion.get(label, {}).get(judge, 0)

    def label_count(self, label: str) -> int:
        return sum(self.confusion.get(label, {}).values())

    def describe(self) -> str:
        if self.kappa is None:
            return self.undefined_reason or "undefined"
        assert self.observed is not None and self.chance is not None
        return (
            f"kappa {self.kappa:.3f} (observed {self.observed:.3f}, chance {self.chance:.3f}, "
            f"n {self.n})"
        )


def cohens_kappa(
    labels: Sequence[str], judged: Sequence[str], categories: Sequence[str] = LABELS
) -> Agreement:
    """Kappa = (po − pe) / (1 − pe) over paired answers from `categories`."""
    if len(labels) != len(judged):
        raise ValueError(f"{len(labels)} labels but {len(judged)} judge answers")
    unknown = sorted({*labels, *judged} - set(categories))
    if unknown:
        raise ValueError(f"answers outside {list(categories)}: {unknown}")
    confusion = {a: {b: 0 for b in categories} for a in categories}
    for label, judge in zip(labels, judged, strict=True):
        confusion[label][judge] += 1
    n = len(labels)
    if n == 0:
        return Agreement(0, None, None, None, confusion)
    observed = sum(confusion[c][c] for c in categories) / n
    chance = sum(
        (sum(confusion[c].values()) / n) * (sum(confusion[a][c] for a in categories) / n)
        for c in categories
    )
    if chance >= 1.0:
        return Agreement(n, observed, chance, None, confusion)
    return Agreement(n, observed, chance, (observed - chance) / (1.0 - chance), confusion)
