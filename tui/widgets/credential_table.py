"""The one table of every pool's credentials, reconciled by row key.

A reload never clears the table: rows that vanished are removed, cells whose text
changed are updated, new rows are added, and the rows are reordered only when the
order changed. The cursor stays on the same credential throughout. Column widths
are fixed, so no update re-measures a column.

The one-second tick only touches countdown cells, only those on screen, and only
when their text changed; repainting such a cell without re-rendering the rest of
the screen is VersionedRows' job (versioned_rows.py).
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from store.view import CredentialView, PoolView

from ..format import countdown
from . import cells as C
from .rows import Entry, entries
from .versioned_rows import VersionedRows


class CredentialTable(VersionedRows, DataTable, inherit_bindings=False):
    """DataTable with keyed reconcile, cheap countdown ticks and a bulk remove."""

    DEFAULT_CSS = """
    CredentialTable { scrollbar-size-vertical: 1; }
    """
    # DataTable's navigation keys again, each with an id so a keymap can move them.
    BINDINGS = [
        Binding("enter", "select_cursor", "Open detail", show=False, id="table.select"),
        Binding("up", "cursor_up", "Cursor up", show=False, id="table.up"),
        Binding("down", "cursor_down", "Cursor down", show=False, id="table.down"),
        Binding("left", "cursor_left", "Scroll left", show=False, id="table.left"),
        Binding("right", "cursor_right", "Scroll right", show=False, id="table.right"),
        Binding("pageup", "page_up", "Page up", show=False, id="table.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="table.page_down"),
        Binding("ctrl+home", "scroll_top", "First row", show=False, id="table.top"),
        Binding("ctrl+end", "scroll_bottom", "Last row", show=False, id="table.bottom"),
        Binding("home", "scroll_home", "Scroll to the left edge", show=False, id="table.home"),
        Binding("end", "scroll_end", "Scroll to the right edge", show=False, id="table.end"),
    ]

    def __init__(self, *, wide: bool = False, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.wide = wide
        self.specs: tuple[C.ColumnSpec, ...] = C.WIDE if wide else C.NARROW
        self._left_col = "left"
        self._entries: dict[str, Entry] = {}
        self._sigs: dict[str, tuple] = {}
        # Cooling rows: row key -> epoch second the cooldown ends.
        self._cooling: dict[str, float] = {}
        self._next_flip = math.inf
        self._now = 0.0
        self._order: list[str] = []
        # (pool, id) -> mark shown in the # cell (tagged, write pending).
        self._marks: dict[tuple[str, str], str] = {}

    # ----------------------------------------------------------- columns
    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for spec in self.specs:
            self.add_column(spec.label, width=spec.width, key=spec.key)

    @property
    def _left_index(self) -> int:
        return next(i for i, spec in enumerate(self.specs) if spec.key == self._left_col)

    def set_wide(self, wide: bool) -> None:
        """Switch layout. Columns differ, so the rows are rebuilt (a user toggle, not a tick)."""
        if wide == self.wide:
            return
        keep = self.cursor_key
        self.wide = wide
        self.specs = C.WIDE if wide else C.NARROW
        entries_now = [self._entries[k] for k in self._order]
        self.clear(columns=True)
        self._entries.clear()
        self._sigs.clear()
        self._cooling.clear()
        self._versions.clear()
        self._order = []
        self._add_columns()
        self._apply(entries_now, self._now, keep)

    # ----------------------------------------------------------- queries
    @property
    def cursor_key(self) -> str | None:
        """Row key under the cursor (None for an empty table)."""
        if not self.row_count:
            return None
        idx = min(max(self.cursor_row, 0), self.row_count - 1)
        return self._order[idx] if idx < len(self._order) else None

    @property
    def cursor_entry(self) -> Entry | None:
        key = self.cursor_key
        return self._entries.get(key) if key is not None else None

    @property
    def cursor_credential(self) -> CredentialView | None:
        entry = self.cursor_entry
        return entry.cred if entry is not None else None

    def entry(self, row_key: str) -> Entry | None:
        """What the row *row_key* shows (a pool header or a credential)."""
        return self._entries.get(row_key)

    @property
    def order(self) -> list[str]:
        """Row keys in display order (a copy)."""
        return list(self._order)

    def cell_text(self, row_key: str, column: str) -> str:
        value = self.get_cell(row_key, column)
        return value.plain if isinstance(value, Text) else str(value)

    def row_texts(self, row_key: str) -> list[str]:
        return [v.plain if isinstance(v, Text) else str(v) for v in self.get_row(row_key)]

    def move_to_key(self, row_key: str) -> bool:
        idx = self.get_row_index(row_key) if row_key in self._entries else None
        if idx is None:
            return False
        self.move_cursor(row=idx, animate=False)
        return True

    # ----------------------------------------------------------- reconcile
    def reconcile(
        self, pools: Sequence[PoolView], now: float, *, filter_text: str = "",
        sort: str = "priority",
    ) -> None:
        """Make the table show *pools* (filtered, sorted), touching only what changed."""
        self._apply(entries(pools, filter_text, sort), now, self.cursor_key)

    def _apply(self, wanted: list[Entry], now: float, keep: str | None) -> None:
        self._now = now
        old_order = self._order
        old_index = {k: i for i, k in enumerate(old_order)}
        want_keys = [e.key for e in wanted]
        want_set = set(want_keys)
        gone = [k for k in old_order if k not in want_set]
        if gone:
            self._drop(gone)
        cooling: dict[str, float] = {}
        added: list[str] = []
        for e in wanted:
            key = e.key
            cv = e.cred
            sig = self._sig(e)
            if cv is not None:
                eff = cv.effective
                if eff.status == "cooling" and eff.available_at is not None:
                    cooling[key] = eff.available_at
            self._entries[key] = e
            if key in self.rows:
                if self._sigs.get(key) != sig:
                    self._sigs[key] = sig
                    self._set_cells(key, self._cells(e, now))
            else:
                self._sigs[key] = sig
                self.add_row(*self._cells(e, now), key=key)
                added.append(key)
        self._cooling = cooling
        self._next_flip = min(cooling.values(), default=math.inf)
        current = [k for k in old_order if k in want_set] + added
        if current != want_keys:
            self._reorder(want_keys)
        self._order = want_keys
        self._restore_cursor(keep, old_index)
        # Unchanged cooling rows keep their countdown text until shown: the visible
        # ones now, the rest as they scroll into view (5,000 cells otherwise).
        self.refresh_countdowns(now)

    def _sig(self, e: Entry) -> tuple:
        cv = e.cred
        if cv is None:
            return ("hdr", e.pool.strategy, tuple(sorted(e.pool.counts.items())))
        return (*C.signature(cv), self._marks.get(cv.key, ""))

    def _cells(self, e: Entry, now: float) -> list:
        if e.cred is None:
            return C.header_cells(e.pool, self.specs)
        return C.credential_cells(e.cred, now, self.specs, self._marks.get(e.cred.key, ""))

    # ----------------------------------------------------------- marks
    def set_marks(self, marks: dict[tuple[str, str], str]) -> None:
        """Show *marks* ((pool, id) -> symbol) in the # cells; only rows whose mark moved change."""
        old, self._marks = self._marks, {k: v for k, v in marks.items() if v}
        moved = {k for k in set(old) | set(self._marks) if old.get(k) != self._marks.get(k)}
        if not moved:
            return
        for key in self._order:
            e = self._entries.get(key)
            if e is None or e.cred is None or e.cred.key not in moved:
                continue
            self._sigs[key] = self._sig(e)
            self._set_cells(key, self._cells(e, self._now))

    def _set_cells(self, key: str, values: Iterable) -> None:
        row = self.row_values(key)
        for spec, value in zip(self.specs, values, strict=True):
            if row.get(spec.key) != value:
                self.update_cell(key, spec.key, value)

    def _restore_cursor(self, keep: str | None, old_index: dict[str, int]) -> None:
        if not self._order:
            return
        if keep is not None and keep in self._entries:
            cur = self.cursor_row
            idx = cur if self._order[cur:cur + 1] == [keep] else self._order.index(keep)
        elif keep is None:
            # First fill: start on the first credential, not on a pool header.
            idx = next((i for i, k in enumerate(self._order) if not self._entries[k].is_header), 0)
        else:
            # The credential under the cursor vanished: stay at the same height.
            idx = min(old_index.get(keep, self.cursor_row) if keep else 0, len(self._order) - 1)
        if idx != self.cursor_row:
            self.move_cursor(row=idx, animate=False, scroll=True)

    # ----------------------------------------------------------- batches
    def _drop(self, keys: list[str]) -> None:
        drop = set(keys)
        for key in keys:
            self._entries.pop(key, None)
            self._sigs.pop(key, None)
        self._order = [k for k in self._order if k not in drop]
        self.drop_rows(keys, self._order)

    def _reorder(self, keys: list[str]) -> None:
        self.set_row_order(keys)

    # ----------------------------------------------------------- the tick
    def visible_range(self) -> range:
        """Row indices currently on screen (row height is 1)."""
        top = int(self.scroll_y)
        height = max(0, self.size.height - (self.header_height if self.show_header else 0))
        return range(top, min(top + height + 1, len(self._order)))

    def tick(self, now: float) -> list[str]:
        """Refresh on-screen countdowns; return the keys whose cooldown has just ended.

        Off-screen rows are brought up to date when they scroll into view, so a
        1,000-row table does one repaint per second, not one per cooling row.
        """
        self._now = now
        flipped: list[str] = []
        if now >= self._next_flip:
            flipped = [k for k, t in self._cooling.items() if t <= now]
            for k in flipped:
                del self._cooling[k]
            self._next_flip = min(self._cooling.values(), default=math.inf)
        self.refresh_countdowns(now)
        return flipped

    def refresh_countdowns(self, now: float | None = None) -> int:
        """Update countdown cells of on-screen cooling rows whose text changed."""
        now = self._now if now is None else now
        dirty: list[Region] = []
        top = int(self.scroll_y) - (self.header_height if self.show_header else 0)
        width = self.size.width
        order = self._order
        cooling = self._cooling
        col = ColumnKey(self._left_col)
        for i in self.visible_range():
            key = order[i]
            t = cooling.get(key)
            if t is None:
                continue
            text = countdown(t - now)
            if self.row_values(key)[col].plain != text:
                self.write_countdown(key, text)
                # Repaint just that line: the rest of the table is unchanged.
                dirty.append(Region(0, i - top, width, 1))
        if dirty:
            self.refresh(*dirty)
        return len(dirty)

    def write_countdown(self, row_key: str, text: str) -> None:
        """Set a countdown cell without invalidating every other row's render cache.

        The row's version bump makes VersionedRows re-render just this cell. Callers
        refresh the widget once per batch (see refresh_countdowns).
        """
        self.write_in_place(row_key, self._left_col, C.T(text))

    def line_text(self, row_key: str) -> str:
        """The row as currently rendered on screen ('' when scrolled out of view)."""
        y = self._order.index(row_key) - int(self.scroll_y)
        if not 0 <= y < self.size.height - 1:
            return ""
        return self.render_line(y + (self.header_height if self.show_header else 0)).text

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value) and self._cooling:
            self.refresh_countdowns()
