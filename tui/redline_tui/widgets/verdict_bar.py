"""The run's verdict counts as one proportional bar with a legend."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.widget import Widget

from redline.presentation import VERDICT_BAR_CELL, VERDICT_COLOURS, VERDICT_STYLES
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict


def verdict_badge(verdict: Verdict) -> Text:
    return Text(f" {verdict.value} ", style=f"reverse {VERDICT_STYLES[verdict]}")


def bar_text(counts: Mapping[Verdict, int], width: int) -> Text:
    """A bar of `width` cells split by verdict share; every non-zero verdict gets a cell."""
    total = sum(counts.values())
    text = Text()
    if total == 0 or width <= 0:
        return text.append("·" * max(width, 0), style="dim")
    present = [v for v in VERDICT_ORDER if counts.get(v, 0)]
    cells = {v: max(1, round(width * counts[v] / total)) for v in present}
    while sum(cells.values()) > width and any(n > 1 for n in cells.values()):
        widest = max(cells, key=lambda v: cells[v])
        cells[widest] -= 1
    for verdict in present:
        text.append(VERDICT_BAR_CELL * cells[verdict], style=VERDICT_COLOURS[verdict])
    return text


def legend_text(counts: Mapping[Verdict, int]) -> Text:
    text = Text()
    for verdict in VERDICT_ORDER:
        if text:
            text.append("  ")
        text.append(verdict.value, style=VERDICT_STYLES[verdict])
        text.append(f" {counts.get(verdict, 0)}")
    return text


class VerdictBar(Widget):
    """Verdict counts (`ok wrong malformed refused truncated transport`) as a bar."""

    DEFAULT_CSS = """
    VerdictBar { height: 2; }
    """

    def __init__(
        self,
        counts: Mapping[Verdict, int] | None = None,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._counts: dict[Verdict, int] = dict(counts or {})

    @property
    def counts(self) -> dict[Verdict, int]:
        return dict(self._counts)

    def set_counts(self, counts: Mapping[Verdict, int]) -> None:
        self._counts = dict(counts)
        self.refresh()

    def render(self) -> Text:
        width = max(self.size.width, 10)
        return Text("\n").join([bar_text(self._counts, width), legend_text(self._counts)])
