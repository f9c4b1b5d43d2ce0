"""Per-row render versions for a DataTable: repaint one cell without re-rendering the screen.

DataTable keys every render cache on one table-wide update counter, so any
update_cell re-renders every visible cell (~170 at 100x30): ~25 ms, each second,
for a ticking countdown. With this mixin a row whose one changing cell was written
in place instead gets a new version in ``_versions``: the row is rebuilt from its
last rendering with only that cell re-rendered (the other cells only change with
the table-wide counter).

The host class (a DataTable subclass listing this mixin first) provides
``_left_index``, the index of the column a version bump re-renders, and writes such
a cell with :meth:`VersionedRows.write_in_place` (then refreshes the row's region itself).

This is the one module that reaches into DataTable's private state (``_data``,
``_row_locations``, ``_update_count``, the render caches, ``textual._two_way_dict``);
tests/test_private_api.py fails when the Textual internals it relies on change.
"""

from __future__ import annotations

import itertools
from typing import Any

from textual._two_way_dict import TwoWayDict
from textual.coordinate import Coordinate
from textual.widgets.data_table import CellKey, RowKey


class VersionedRows:
    """Mixin for a DataTable subclass: per-row render versions (see the module docstring)."""

    _left_index: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._versions: dict[RowKey, int] = {}
        self._version_seq = itertools.count(1)
        self._real_update_count: int | None = None

    def _render_line_in_row(self, row_key, line_no, base_style, cursor_location,
                            hover_location):
        version = self._versions.get(row_key)
        if version is None:
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location,
                                               hover_location)
        real = self._update_count
        common = (row_key, line_no, base_style, cursor_location, hover_location,
                  self.cursor_type, self.show_cursor, self._show_hover_cursor)
        base_key = (*common, real, self._pseudo_class_state)
        mine_key = (*common, (real, version), self._pseudo_class_state)
        cache = self._row_render_cache
        pair = cache.get(mine_key)
        if pair is not None:
            return pair
        base = cache.get(base_key)
        li = self._left_index
        if base is not None and not base[0] and len(base[1]) == len(self.columns) + 1:
            # Splice: the row as last rendered, with only the countdown cell re-rendered.
            row_index = self._row_locations.get(row_key)
            where = Coordinate(row_index, li)
            width = self.ordered_columns[li].get_render_width(self)
            self._update_count, self._real_update_count = (real, version), real
            try:
                cell = self._render_cell(
                    row_index, li, self._get_row_style(row_index, base_style), width,
                    cursor=self._should_highlight(cursor_location, where, self.cursor_type),
                    hover=self._should_highlight(hover_location, where, self.cursor_type),
                )[line_no]
            finally:
                self._update_count, self._real_update_count = real, None
            cells = list(base[1])
            cells[li] = cell
            pair = (base[0], cells)
        else:
            self._update_count, self._real_update_count = (real, version), real
            try:
                pair = super()._render_line_in_row(row_key, line_no, base_style,
                                                   cursor_location, hover_location)
            finally:
                self._update_count, self._real_update_count = real, None
            # Later ticks splice into this one: its other cells are current for `real`.
            cache[base_key] = pair
        cache[mine_key] = pair
        return pair

    def _render_line(self, y, x1, x2, base_style):
        try:
            row_key = self._get_offsets(y)[0]
        except LookupError:
            row_key = None
        if row_key is None or row_key not in self._versions:
            return super()._render_line(y, x1, x2, base_style)
        # A versioned row's line is keyed like any other in the shared line cache, so
        # it would come back stale: render it through a private, throwaway cache.
        shared = self._line_cache
        self._line_cache = {}
        try:
            return super()._render_line(y, x1, x2, base_style)
        finally:
            self._line_cache = shared

    def _render_cell(self, row_index, column_index, base_style, width, cursor=False,
                     hover=False):
        real = self._real_update_count
        if real is None or column_index == self._left_index:
            return super()._render_cell(row_index, column_index, base_style, width, cursor,
                                        hover)
        # Inside a versioned row, only the countdown cell is new: the others hit the cache.
        versioned = self._update_count
        self._update_count = real
        try:
            return super()._render_cell(row_index, column_index, base_style, width, cursor,
                                        hover)
        finally:
            self._update_count = versioned

    # ----------------------------------------------------------- row bookkeeping
    def row_values(self, row_key: str) -> dict[Any, Any]:
        """The row's cell values by column key, as DataTable holds them (no copy)."""
        return self._data[RowKey(row_key)]

    def write_in_place(self, row_key: str, column: str, value: Any) -> None:
        """Set one cell without invalidating every other row's render cache (a version bump)."""
        rk = RowKey(row_key)
        self._data[rk][column] = value
        self._versions[rk] = next(self._version_seq)

    # DataTable.remove_row rebuilds its key->index map per call (O(n) each); a
    # filter that hides thousands of rows would be quadratic. These do the same
    # bookkeeping once per batch.
    def drop_rows(self, keys: list[str], remaining: list[str]) -> None:
        """Remove the rows *keys*; *remaining* is the order of the rows left."""
        for key in keys:
            rk = RowKey(key)
            for ck in self._data.get(rk, {}):
                self._updated_cells.discard(CellKey(rk, ck))
            self._new_rows.discard(rk)
            self.rows.pop(rk, None)
            self._data.pop(rk, None)
            self._versions.pop(rk, None)
        self._row_locations = TwoWayDict({RowKey(k): i for i, k in enumerate(remaining)})
        self._require_update_dimensions = True
        self._update_count += 1
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
        self.refresh(layout=True)
        self.check_idle()

    def set_row_order(self, keys: list[str]) -> None:
        """Show the existing rows in the order *keys* (all of them, nothing added)."""
        self._row_locations = TwoWayDict({RowKey(k): i for i, k in enumerate(keys)})
        self._update_count += 1
        self.refresh()
