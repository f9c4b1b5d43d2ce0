"""Cursor, keyboard and pool folding for CredentialTable (htop/k9s habits).

A mixin over the table's row bookkeeping (``_order``, ``_index``, ``_entries``), so
the painting code and the navigation code each stay small enough to read.
"""

from __future__ import annotations

from textual import events

from tui.widgets.rows import header_key


class TableNavigation:
    """Cursor moves that keep a row visible, ``[``/``]`` between pools, fold on a header."""

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        if not self._order:
            return
        row = min(max(row, 0), len(self._order) - 1)
        old = self.cursor_row
        self.cursor_row = row
        if old != row:
            if old < len(self._order):
                self._refresh_rows([self._order[old]])
            self._refresh_rows([self._order[row]])
            self.post_message(self.RowHighlighted(self._order[row]))
        if scroll:
            self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False, immediate=True)

    def move_to_key(self, row_key: str) -> bool:
        idx = self._index.get(row_key)
        if idx is None:
            return False
        self.move_cursor(row=idx)
        return True

    def _restore_cursor(self, keep: str | None, old_index: dict[str, int]) -> None:
        if not self._order:
            return
        if keep is not None and keep in self._index:
            idx = self._index[keep]
        elif keep is None:
            # First fill: start on the first credential, not on a pool header.
            idx = next((i for i, k in enumerate(self._order) if not self._entries[k].is_header), 0)
        else:
            # The credential under the cursor vanished: stay at the same height.
            idx = min(old_index.get(keep, self.cursor_row), len(self._order) - 1)
        self.move_cursor(row=idx)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + max(1, self.size.height - 2))

    def action_first_row(self) -> None:
        self.move_cursor(row=0)

    def action_last_row(self) -> None:
        self.move_cursor(row=len(self._order) - 1)

    def _headers(self) -> list[int]:
        return [i for i, k in enumerate(self._order) if self._entries[k].is_header]

    def action_prev_pool(self) -> None:
        prev = [i for i in self._headers() if i < self.cursor_row]
        if prev:
            self.move_cursor(row=prev[-1])

    def action_next_pool(self) -> None:
        nxt = [i for i in self._headers() if i > self.cursor_row]
        if nxt:
            self.move_cursor(row=nxt[0])

    def fold(self, pool: str, folded: bool) -> None:
        """Collapse (True) or expand a pool's rows under its header; the cursor stays on it."""
        if (pool in self._folded) == folded:
            return
        keep = self.cursor_key
        (self._folded.add if folded else self._folded.discard)(pool)
        self._sigs.pop(header_key(pool), None)
        self._versions[header_key(pool)] = self._cells_v[header_key(pool)] = next(self._seq)
        self._rebuild_order()
        self._restore_cursor(keep if keep in self._index else header_key(pool), {})
        if self.materialize_visible():
            self._relayout()
        self.refresh()
        self._arm()

    def action_select_cursor(self) -> None:
        e = self.cursor_entry
        if e is None:
            return
        if e.is_header:
            self.fold(e.pool.key, e.pool.key not in self._folded)
        else:
            self.post_message(self.RowSelected(e.key))

    def action_cursor_left(self) -> None:
        e = self.cursor_entry
        if e is not None and e.is_header:
            self.fold(e.pool.key, True)
        else:
            self.scroll_to(x=self.scroll_x - 4, animate=False)

    def action_cursor_right(self) -> None:
        e = self.cursor_entry
        if e is not None and e.is_header:
            self.fold(e.pool.key, False)
        else:
            self.scroll_to(x=self.scroll_x + 4, animate=False)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.move_cursor(row=int(self.scroll_y) + event.y - 1)
