"""The credential table's cursor and window: which row the cursor is on, where each move
takes it, the range it marks, and which rows the widget's lines show.

:class:`TableCursor` holds the cursor's row and answers "where to" for every move (the
pool above or below, back onto the same credential after a reload), the way Textual's
``DocumentNavigator`` answers for a ``TextArea``, and the anchor of a range mark (lazygit's
range select: the rows from the anchor to the cursor, wherever it moves); :class:`Window`
maps rows to lines at one scroll position. The widget moves the cursor, repaints the lines
and scrolls.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message

from tui.widgets.rows import Entry, mark_key
from tui.widgets.table_rows import RowStore


class RowMessage(Message):
    """About the row *row_key* (None: the table is empty): the table's highlighted and selected."""

    def __init__(self, row_key: str | None) -> None:
        super().__init__()
        self.row_key = row_key


# Home/End: the first and last row. Every table of the console binds them so, under these ids
# (tui.widgets.plain_table.PlainTable for the others): one keymap entry moves them all.
FIRST_LAST = [
    Binding("home,ctrl+home", "move('first')", "First row", show=False, id="table.top"),
    Binding("end,ctrl+end", "move('last')", "Last row", show=False, id="table.bottom"),
]

# The table's keys (tui.widgets.credential_table.CredentialTable.BINDINGS).
TABLE_BINDINGS = [
    Binding("enter", "select_cursor", "Open detail / fold pool", show=False, id="table.select"),
    Binding("up", "move('up')", "Cursor up", show=False, id="table.up"),
    Binding("down", "move('down')", "Cursor down", show=False, id="table.down"),
    Binding("left", "sideways(True, -4)", "Fold pool / scroll left", show=False, id="table.left"),
    Binding("right", "sideways(False, 4)", "Unfold pool / scroll right", show=False, id="table.right"),
    Binding("pageup", "move('page_up')", "Page up", show=False, id="table.page_up"),
    Binding("pagedown", "move('page_down')", "Page down", show=False, id="table.page_down"),
    # vi's and less's half page (#28)
    Binding("ctrl+d", "move('half_down')", "Half a page down", show=False, id="table.half_down"),
    Binding("ctrl+u", "move('half_up')", "Half a page up", show=False, id="table.half_up"),
    *FIRST_LAST,
    Binding("left_square_bracket", "move('prev_pool')", "Previous pool", show=False, key_display="[",
            id="table.prev_pool"),
    Binding("right_square_bracket", "move('next_pool')", "Next pool", show=False, key_display="]",
            id="table.next_pool"),
]


RANGE_MARK = "┃"   # in the # cell of a range mark's rows: a symbol, not a colour alone


class TableCursor:
    """The cursor's row (kept in range by the widget) over a :class:`RowStore`."""

    def __init__(self, rows: RowStore) -> None:
        self._rows = rows
        self.row = 0
        self.anchor: str | None = None   # the row key a range mark started on

    def range_entries(self) -> list[Entry]:
        """The credential rows from the anchor to the cursor, either way round (none without
        an anchor, or when the anchor's row is no longer shown)."""
        at = self._rows.index_of(self.anchor)
        if at is None or not self._rows.row_count:
            return []
        lo, hi = sorted((at, self.clamp(self.row)))
        rows = map(self._rows.entry, self._rows.keys_in(range(lo, hi + 1)))
        return [e for e in rows if e is not None and e.cred is not None]

    def range_marks(self) -> dict[tuple[str, str], str]:
        """(pool, id) -> RANGE_MARK for the rows of the range mark."""
        return {mark_key(e): RANGE_MARK for e in self.range_entries()}

    @property
    def key(self) -> str | None:
        """Row key under the cursor (None for an empty table)."""
        n = self._rows.row_count
        return self._rows.key_at(self.clamp(self.row)) if n else None

    @property
    def entry(self) -> Entry | None:
        key = self.key
        return self._rows.entry(key) if key is not None else None

    def clamp(self, row: int) -> int:
        return min(max(row, 0), self._rows.row_count - 1)

    def move(self, row: int) -> list[str]:
        """Put the cursor on *row* (kept in range); the keys of the lines that change
        (the row left, if any, then the row reached), or none if the cursor stays."""
        old, self.row = self.row, self.clamp(row)
        if old == self.row:
            return []
        left = [self._rows.key_at(old)] if old < self._rows.row_count else []
        return [*left, self._rows.key_at(self.row)]

    def target(self, where: str, page: int) -> int | None:
        """The row a move *where* goes to (kept in range by the move): ``up``, ``down``,
        ``page_up``, ``page_down`` (by *page* rows), ``half_up``, ``half_down`` (by half of it),
        ``first``, ``last``, ``prev_pool``, ``next_pool`` (None: no pool header that way)."""
        if where == "prev_pool":
            return self.pool_above()
        if where == "next_pool":
            return self.pool_below()
        half = max(1, page // 2)
        steps = {"up": -1, "down": 1, "page_up": -page, "page_down": page,
                 "half_up": -half, "half_down": half}
        if where in steps:
            return self.row + steps[where]
        return 0 if where == "first" else self._rows.row_count - 1

    def pool_above(self) -> int | None:
        """The nearest pool header above the cursor."""
        prev = [i for i in self._rows.header_rows() if i < self.row]
        return prev[-1] if prev else None

    def pool_below(self) -> int | None:
        nxt = [i for i in self._rows.header_rows() if i > self.row]
        return nxt[0] if nxt else None

    def restored(self, keep: str | None, old_row: int | None) -> int:
        """Where the cursor goes after the rows changed: on the credential *keep* if it is
        still shown; on the first credential after a first fill (*keep* None); else at the
        height *keep* was at (*old_row*), or where the cursor is."""
        idx = self._rows.index_of(keep)
        if idx is not None:
            return idx
        if keep is None:
            return self._rows.first_credential()
        return min(self.row if old_row is None else old_row, self._rows.row_count - 1)


@dataclass(frozen=True)
class Window:
    """The widget's lines at one scroll position: line 0 holds the column titles, line
    *y* the row ``top + y - 1``."""

    top: int
    height: int   # lines, the titles' included

    @property
    def shown(self) -> int:
        """How many rows fit under the titles."""
        return max(1, self.height - 1)

    @property
    def page(self) -> int:
        return max(1, self.height - 2)

    def rows(self, count: int) -> range:
        """Indices of the rows on screen, of *count* rows."""
        return range(self.top, min(self.top + max(0, self.height - 1), count))

    def line_of(self, row: int | None) -> int | None:
        """The line showing *row* (None when it is scrolled out of view)."""
        if row is None or not 0 <= row - self.top < self.height - 1:
            return None
        return row - self.top + 1

    def row_at(self, y: int) -> int:
        return self.top + y - 1

    def scroll_for(self, row: int) -> int | None:
        """The first row to show so *row* is on screen (None: it already is)."""
        if row < self.top:
            return row
        if row >= self.top + self.shown:
            return row - self.shown + 1
        return None
