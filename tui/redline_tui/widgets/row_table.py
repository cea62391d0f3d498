"""A row-cursor table and an option list with the keys lazygit, k9s and harlequin users
reach for, and columns laid out by priority to fit the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable, OptionList

CellType = TypeVar("CellType")

#: Cells a DataTable column takes beyond its width (one cell of padding on each side).
CELL_PADDING = 2
#: Kept free for the vertical scrollbar.
SCROLLBAR = 2


@dataclass(frozen=True)
class ColumnSpec:
    """One column: its natural width, how readily it gives way, how far it may shrink."""

    key: str
    label: str
    width: int
    #: 0 is always shown; a higher number gives way first when the terminal is narrow.
    priority: int = 0
    #: A column whose text may be cut (with …) down to this width; None: fixed width.
    min_width: int | None = None

    @property
    def least(self) -> int:
        return max(len(self.label), self.min_width if self.min_width is not None else self.width)

    @property
    def most(self) -> int:
        return max(len(self.label), self.width)


def fit_columns(specs: Sequence[ColumnSpec], available: int) -> dict[str, int]:
    """The columns that fit in `available` cells, in display order, with their widths.

    The priority-0 columns are always kept, at their natural width as far as the space
    goes (shrinkable ones cut down to their least). Then each other column by priority
    (ties in display order) joins at its natural width if it fits, else at its least if
    that fits: a more important column is never cut to make room for a less important one.
    What is left grows the cut columns back.
    """
    ranked = sorted(range(len(specs)), key=lambda i: (specs[i].priority, i))
    kept = [i for i in ranked if specs[i].priority == 0]
    widths = {i: specs[i].least for i in kept}
    used = sum(w + CELL_PADDING for w in widths.values())
    for i in kept:
        grow = min(specs[i].most - widths[i], max(0, available - used))
        widths[i] += grow
        used += grow
    for i in ranked:
        if i in widths:
            continue
        for width in (specs[i].most, specs[i].least):
            if used + width + CELL_PADDING <= available:
                widths[i] = width
                used += width + CELL_PADDING
                break
    for i in ranked:  # what is left grows the cut columns back, the most important first
        if i in widths:
            grow = min(specs[i].most - widths[i], max(0, available - used))
            widths[i] += grow
            used += grow
    return {specs[i].key: widths[i] for i in sorted(widths)}


def hidden_labels(specs: Sequence[ColumnSpec], shown: dict[str, int]) -> list[str]:
    return [s.label for s in specs if s.key not in shown]


class RowTable(DataTable[CellType]):
    """g/Home first row, G/End last row, j/k down/up; PgUp/PgDn as DataTable has them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g,home", "scroll_top", "First row", show=False),
        Binding("G,end", "scroll_bottom", "Last row", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, zebra_stripes: bool = True
    ) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=zebra_stripes)

    def available_width(self) -> int:
        """Cells the columns may take: the table's width once laid out, else the screen's."""
        width = self.size.width or self.app.size.width
        return max(0, width - SCROLLBAR)

    def set_columns(self, specs: Sequence[ColumnSpec]) -> dict[str, int]:
        """Replace the columns (and rows) with those of `specs` that fit; their widths."""
        shown = fit_columns(specs, self.available_width())
        self.clear(columns=True)
        labels = {s.key: s.label for s in specs}
        for key, width in shown.items():
            self.add_column(labels[key], key=key, width=width)
        return shown


class RowList(OptionList):
    """An option list where j/k move as ↓/↑, g/G go to the first and last entry."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "First", show=False),
        Binding("G", "last", "Last", show=False),
    ]
