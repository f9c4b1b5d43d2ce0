"""Row cells and marks of CredentialTable: every change bumps that row's version.

The version is what the strip cache is keyed by, so setting a cell here is all it
takes for that row, and only that row, to be rendered again.
"""

from __future__ import annotations

from . import cells as C
from .cells import ColumnSpec
from .rows import mark_key

GROWING = ("label", "message", "error", "fingerprint", "reason", "source")
# The # column alone, uncut: what a mark change re-renders.
POS = (ColumnSpec("pos", "#", 10**6),)
# The columns a finding's note leads (narrow "code/reason", wide "reason"), uncut.
NOTED = (ColumnSpec("error", "code/reason", 10**6), ColumnSpec("reason", "reason", 10**6))


class RowCells:
    """Cell store per row key, with per-column text lengths kept for the layout."""

    def cell_text(self, row_key: str, column: str) -> str:
        """The text *column* of *row_key* shows at the current width."""
        cols = [s.key for s in self.specs]
        return self._cell_texts(row_key)[cols.index(column)]

    def row_texts(self, row_key: str) -> list[str]:
        return self._cell_texts(row_key)

    def line_text(self, row_key: str) -> str:
        """The row as currently painted ('' when scrolled out of view)."""
        y = self._index.get(row_key, -1) - int(self.scroll_y) + 1
        if row_key not in self._index or not 1 <= y < self.size.height:
            return ""
        return self.render_line(y).text

    def update_cell(self, row_key: str, column: str, value: tuple[str, str]) -> None:
        """Set one cell; the row re-renders on its next paint (callers refresh the line)."""
        row = self._data[row_key]
        self._count_length(column, row.get(column), -1)
        row[column] = value
        self._count_length(column, value, +1)
        self._versions[row_key] = self._cells_v[row_key] = next(self._seq)

    def _set_data(self, key: str, row: dict[str, tuple[str, str]]) -> None:
        self._data[key] = row
        for col in GROWING:
            self._count_length(col, row.get(col), +1)
        self._versions[key] = self._cells_v[key] = next(self._seq)

    def _forget(self, key: str) -> None:
        row = self._data.pop(key, {})
        for col in GROWING:
            self._count_length(col, row.get(col), -1)
        self._sigs.pop(key, None)
        self._versions.pop(key, None)
        self._cells_v.pop(key, None)
        self._entries.pop(key, None)

    def _count_length(self, col: str, value: tuple[str, str] | None, delta: int) -> None:
        lengths = self._lengths.get(col)
        if lengths is None or value is None:
            return
        n = len(value[0])
        left = lengths.get(n, 0) + delta
        if left > 0:
            lengths[n] = left
        else:
            lengths.pop(n, None)

    @property
    def marks(self) -> dict[tuple[str, str], str]:
        return dict(self._marks)

    def set_marks(self, marks: dict[tuple[str, str], str]) -> None:
        """Show *marks* ((pool, id) -> symbol) in the # cells; only rows whose mark moved change."""
        old, self._marks = self._marks, {k: v for k, v in marks.items() if v}
        moved = {k for k in set(old) | set(self._marks) if old.get(k) != self._marks.get(k)}
        if not moved:
            return
        dirty = []
        for key, e in self._entries.items():
            if e.cred is None or mark_key(e) not in moved:
                continue
            self._sigs.pop(key, None)  # the next reconcile recomputes it
            pos = C.credential_cells(e.cred, self._now, POS, self._marks.get(mark_key(e), ""))
            self.update_cell(key, "pos", (pos[0].plain, ""))
            dirty.append(key)
        self._refresh_rows(dirty)

    @staticmethod
    def noted(cells: dict[str, tuple[str, str]], note: str) -> dict[str, tuple[str, str]]:
        """The reason cells with *note* (a symbol and a word, never colour alone) in front."""
        out = {}
        for spec in NOTED:
            text, style = cells.get(spec.key, (C.NULL, ""))
            out[spec.key] = (note if text in ("", C.NULL) else f"{note} {text}", style)
        return out

    def set_notes(self, notes: dict[tuple[str, str], str]) -> None:
        """Show *notes* ((view pool key, id) -> "⚑ shared") before the reason; only moved rows change."""
        old, self._notes = self._notes, {k: v for k, v in notes.items() if v}
        moved = {k for k in set(old) | set(self._notes) if old.get(k) != self._notes.get(k)}
        if not moved:
            return
        dirty = []
        for key, e in self._entries.items():
            if e.cred is None or mark_key(e) not in moved:
                continue
            self._sigs.pop(key, None)
            base = dict(zip((s.key for s in NOTED), C.cell_texts(e.cred, self._now, NOTED), strict=True))
            note = self._notes.get(mark_key(e))
            for col, value in (self.noted(base, note) if note else base).items():
                self.update_cell(key, col, value)
            dirty.append(key)
        self._refresh_rows(dirty)
