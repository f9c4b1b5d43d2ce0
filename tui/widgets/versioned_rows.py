"""Per-row render versions for a DataTable: repaint one cell without re-rendering the screen.

DataTable keys every render cache on one table-wide update counter, so any
update_cell re-renders every visible cell (~170 at 100x30): ~25 ms, each second,
for a ticking countdown. With this mixin a row whose one changing cell was written
in place instead gets a new version in ``_versions``: the row is rebuilt from its
last rendering with only that cell re-rendered (the other cells only change with
the table-wide counter).

The host class (a DataTable subclass listing this mixin first) provides
``_left_index``, the index of the column a version bump re-renders, and bumps a
row with ``self._versions[row_key] = next(self._version_seq)`` after writing the
cell's value into ``_data`` (then refreshes the row's region itself).
"""

from __future__ import annotations

import itertools
from typing import Any

from textual.coordinate import Coordinate
from textual.widgets.data_table import RowKey


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
