"""A row-cursor table with the keys lazygit, k9s and harlequin users reach for."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable

CellType = TypeVar("CellType")


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
