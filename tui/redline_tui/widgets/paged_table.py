"""A row table of any length that holds only the pages of rows near the view.

A merged night's run has 100,000 cases: a DataTable holding a row object, a cell dict
and its layout per row takes seconds to fill and to jump to its end. Here the table
knows its row count (so the scrollbar, End and PageDown see every row) but holds only
the pages around what is on screen: a row is read from its source (`read_page`) when it
is drawn, highlighted or asked for, and the pages furthest from the cursor are let go.
Rows are one line high; DataTable draws a held row exactly as it draws any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, Row, RowKey

from redline_tui.widgets.row_table import RowTable

CellType = TypeVar("CellType")

#: Rows read from the source at a time.
PAGE = 200
#: Pages held at most (the ones nearest the cursor are kept).
HELD_PAGES = 8


class _Lines(Generic[CellType]):
    """The table's lines as DataTable indexes them (row key, line in row): every row is
    one line, and a row is read when its line is looked up."""

    def __init__(self, table: PagedTable[CellType]) -> None:
        self._table = table

    def __len__(self) -> int:
        return self._table.row_count

    def __getitem__(self, y: int) -> tuple[RowKey, int]:
        if not 0 <= y < self._table.row_count:
            raise IndexError(y)
        return self._table.row_key_at(y), 0

    def clear(self) -> None:
        """Nothing is cached here: DataTable clears its lines on `clear`."""


class PagedTable(RowTable[CellType]):
    """`row_count` rows of one line, read `PAGE` at a time by `read_page` as they are
    needed; at most `HELD_PAGES` pages held. `show_rows` sets how many there are."""

    def __init__(
        self, *, id: str | None = None, classes: str | None = None, zebra_stripes: bool = True
    ) -> None:
        # Set first: DataTable's own set-up already asks how many rows there are.
        self._total = 0
        #: Held pages (by number, least recently used first) and their row keys.
        self._held: dict[int, list[RowKey]] = {}
        self._lines: _Lines[CellType] = _Lines(self)
        self._ordered_held: tuple[int, list[Row]] | None = None
        super().__init__(id=id, classes=classes, zebra_stripes=zebra_stripes)

    # -- the source --------------------------------------------------------------------

    def read_page(self, start: int, count: int) -> list[tuple[str, Sequence[CellType]]]:
        """Rows `start` to `start + count` (fewer at the end): each its key and cells."""
        raise NotImplementedError

    def let_go(self, keys: Sequence[str]) -> None:
        """These rows are no longer held (a subclass drops what it kept for them)."""

    def show_rows(self, total: int) -> None:
        """The table now has `total` rows (none held yet); the cursor goes to the first."""
        self.clear()
        self._total = total
        self._require_update_dimensions = True
        self.check_idle()

    # -- holding rows ------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return self._total

    @property
    def held_rows(self) -> int:
        """Rows held now (at most `HELD_PAGES` pages)."""
        return len(self.rows)

    def held_keys(self) -> list[RowKey]:
        """The keys of the rows held, in order (a page holds rows in a row)."""
        return [key for page in sorted(self._held) for key in self._held[page]]

    def row_key_at(self, index: int) -> RowKey:
        """The key of row `index`, its page read first if it is not held."""
        page = index // PAGE
        keys = self._held.get(page)
        if keys is None:
            keys = self._hold(page)
        else:
            self._held[page] = self._held.pop(page)  # the most recently used
        return keys[index - page * PAGE]

    def _hold(self, page: int) -> list[RowKey]:
        start = page * PAGE
        rows = self.read_page(start, min(PAGE, self._total - start))
        keys = []
        columns = self.ordered_columns
        for offset, (key, cells) in enumerate(rows):
            row_key = RowKey(key)
            self._row_locations[row_key] = start + offset
            self._data[row_key] = {c.key: cell for c, cell in zip(columns, cells, strict=True)}
            self.rows[row_key] = Row(row_key, 1)
            self._new_rows.add(row_key)
            keys.append(row_key)
        if len(keys) < min(PAGE, self._total - start):
            # The source lost rows since they were counted: the table ends where it does.
            self._total = start + len(keys)
            self.cursor_coordinate = self.cursor_coordinate
        self._held[page] = keys
        self._update_count += 1
        self._require_update_dimensions = True
        self._let_go_far_pages()
        self.check_idle()
        return keys

    def _let_go_far_pages(self) -> None:
        """Past `HELD_PAGES`, the least recently used pages go, never those on screen or
        under the cursor."""
        top = int(self.scroll_y) // PAGE
        bottom = (int(self.scroll_y) + max(1, self.size.height)) // PAGE
        keep = {self.cursor_row // PAGE, *range(top, bottom + 1)}
        for page in list(self._held):
            if len(self._held) <= HELD_PAGES:
                break
            if page in keep:
                continue
            keys = self._held.pop(page)
            for key in keys:
                if key in self._row_locations:
                    del self._row_locations[key]
                self._data.pop(key, None)
                self.rows.pop(key, None)
                self._new_rows.discard(key)
            self.let_go([str(key.value) for key in keys])

    def clear(self, columns: bool = False) -> PagedTable[CellType]:
        self._held.clear()
        self._ordered_held = None
        self._total = 0
        super().clear(columns)
        return self

    # -- DataTable, for rows of one line that are not all held --------------------------

    @property
    def _y_offsets(self) -> _Lines[CellType]:  # type: ignore[override]
        return self._lines

    @property
    def ordered_rows(self) -> list[Row]:
        """The rows held, in order (DataTable reads its fixed rows from the first)."""
        cached = self._ordered_held
        if cached is None or cached[0] != self._update_count:
            rows = [self.rows[key] for key in self.held_keys()]
            cached = self._ordered_held = (self._update_count, rows)
        return cached[1]

    def is_valid_row_index(self, row_index: int) -> bool:
        return 0 <= row_index < self._total

    def get_row_at(self, row_index: int) -> list[CellType]:
        if self.is_valid_row_index(row_index):
            self.row_key_at(row_index)
        return super().get_row_at(row_index)

    def coordinate_to_cell_key(self, coordinate: Coordinate) -> CellKey:
        if self.is_valid_coordinate(coordinate):
            self.row_key_at(coordinate.row)
        return super().coordinate_to_cell_key(coordinate)

    def _highlight_row(self, row_index: int) -> None:
        self.refresh_row(row_index)
        if self.is_valid_row_index(row_index):
            row_key = self.row_key_at(row_index)
            self.post_message(DataTable.RowHighlighted(self, row_index, row_key))

    def _row_top(self, row_index: int) -> int:
        return row_index + (self.header_height if self.show_header else 0)

    def _get_row_region(self, row_index: int) -> Region:
        if not self.is_valid_row_index(row_index):
            return Region(0, 0, 0, 0)
        width = (
            sum(column.get_render_width(self) for column in self.columns.values())
            + self._row_label_column_width
        )
        return Region(0, self._row_top(row_index), max(self.size.width, width), 1)

    def _get_cell_region(self, coordinate: Coordinate) -> Region:
        if not self.is_valid_coordinate(coordinate):
            return Region(0, 0, 0, 0)
        row_index, column_index = coordinate
        columns = self.ordered_columns
        x = (
            sum(column.get_render_width(self) for column in columns[:column_index])
            + self._row_label_column_width
        )
        width = columns[column_index].get_render_width(self)
        return Region(x, self._row_top(row_index), width, 1)

    def action_page_down(self) -> None:
        if not self._page_cursor(1):
            super().action_page_down()

    def action_page_up(self) -> None:
        if not self._page_cursor(-1):
            super().action_page_up()

    def _page_cursor(self, direction: int) -> bool:
        """The view and the cursor one screen down (1) or up (-1), as DataTable moves them
        over rows of one line (without walking every row before the cursor); False when
        there is no row cursor to move."""
        self._set_hover_cursor(False)
        if not (self.show_cursor and self.cursor_type in ("cell", "row")):
            return False
        height = self.scrollable_content_region.height - (
            self.header_height if self.show_header else 0
        )
        row = self.cursor_row
        rows = min(height + 1, self._total - row if direction > 0 else row + 1)
        self.scroll_relative(y=direction * height, animate=False, force=direction > 0)
        self.move_cursor(row=row + direction * (rows - 1), scroll=False)
        return True
