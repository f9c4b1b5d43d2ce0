"""Row cells and marks of CredentialTable: every change bumps that row's version.

The version is what the strip cache is keyed by, so setting a cell here is all it
takes for that row, and only that row, to be rendered again.

A credential row's text is built the first time the row is shown (or asked for):
until then it is *deferred*, and the longest raw text of its pool's deferred rows
(:func:`estimate`, one tight pass, no funnel) stands in for it in the column widths.
A 10,000-row first fill so formats the forty rows on screen, not 10,000 (each through
the redacting text funnel).
"""

from __future__ import annotations

from typing import Any, Iterable

from tui.widgets import cells as C
from tui.widgets.cells import ColumnSpec
from tui.widgets.rows import Entry, mark_key

GROWING = ("label", "message", "error", "fingerprint", "reason", "source")
# The # column alone, uncut: what a mark change re-renders.
POS = (ColumnSpec("pos", "#", 10**6),)
# The columns a finding's note leads (narrow "code/reason", wide "reason"), uncut.
NOTED = (ColumnSpec("error", "code/reason", 10**6), ColumnSpec("reason", "reason", 10**6))


def estimate(rows: Iterable[Entry], fps: dict, notes: dict) -> dict[str, int]:
    """Longest raw text per growing column over credential *rows*.

    Raw: the funnel (redaction, escaping) rarely changes a length, and a row's exact
    lengths count as soon as it is shown. Header and banner rows are skipped.
    """
    null = len(C.NULL)
    label = message = error = reason = source = fp = null
    for e in rows:
        cv = e.cred
        if cv is None:
            continue
        r = cv.row
        get = r.get
        if (v := get("label")):
            label = max(label, len(str(v)))
        if (v := get("last_error_message")):
            message = max(message, len(str(v)))
        if (v := get("source")):
            source = max(source, len(str(v)))
        why = get("last_error_reason") or get("failure_reason")
        code = get("last_error_code")
        n_why = len(str(why)) if why else 0
        n_err = (len(str(code)) + 1 if code is not None else 0) + n_why
        note = notes.get((e.pool.key, cv.id)) if notes else None
        if note:
            n_why += len(note) + 1
            n_err += len(note) + 1
        reason = max(reason, n_why)
        error = max(error, n_err)
        f = (fps.get(cv.key) if fps else None) or cv.fingerprint
        if f:
            fp = max(fp, len(f))
    return {"label": label, "message": message, "error": error, "reason": reason,
            "source": source, "fingerprint": max(fp, len("env unset"))}


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

    def _row(self, row_key: str) -> dict[str, tuple[str, str]]:
        """The row's cells, built now if the row was deferred."""
        row = self._data.get(row_key)
        if row is None:
            self._materialize(row_key)
            row = self._data[row_key]
        return row

    def _defer(self, key: str) -> None:
        """Keep the row unformatted until shown (its pool's estimate stands in for its lengths)."""
        self._lazy.add(key)
        self._sigs.pop(key, None)
        self._versions[key] = self._cells_v[key] = next(self._seq)

    def _materialize(self, key: str) -> bool:
        """Format a deferred row; False if it was not deferred."""
        if key not in self._lazy:
            return False
        self._lazy.discard(key)
        e = self._entries[key]
        self._sigs[key] = self._sig(e, self._fps)
        self._set_data(key, self._cells(e, self._now, self._fps))
        return True

    def materialize_visible(self) -> bool:
        """Format the deferred rows on screen (and under the cursor); True if any was."""
        order = self._order
        rows = [order[i] for i in self.visible_range()]
        if order:
            rows.append(order[min(max(self.cursor_row, 0), len(order) - 1)])
        return any([self._materialize(k) for k in rows if k in self._lazy])

    def _natural(self) -> dict[str, int]:
        """Longest text per growing column: exact for formatted rows, estimated for the rest."""
        natural = {k: max(v, default=0) for k, v in self._lengths.items()}
        for est in self._pool_est.values():
            for k, n in est.items():
                if n > natural[k]:
                    natural[k] = n
        return natural

    def update_cell(self, row_key: str, column: str, value: tuple[str, str]) -> None:
        """Set one cell; the row re-renders on its next paint (callers refresh the line)."""
        row = self._row(row_key)
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
        self._lazy.discard(key)
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

    def _moved(self, old: dict, new: dict) -> list[tuple[str, Any]]:
        """(row key, entry) of the credential rows whose mark or note differs in *new*; their
        signatures are dropped so the next reconcile recomputes them."""
        moved = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
        if not moved:
            return []
        out = [(key, e) for key, e in self._entries.items()
               if e.cred is not None and mark_key(e) in moved]
        for key, _ in out:
            self._sigs.pop(key, None)
        return out

    def set_marks(self, marks: dict[tuple[str, str], str]) -> None:
        """Show *marks* ((pool, id) -> symbol) in the # cells; only rows whose mark moved change."""
        old, self._marks = self._marks, {k: v for k, v in marks.items() if v}
        dirty = []
        for key, e in self._moved(old, self._marks):
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
        dirty = []
        for key, e in self._moved(old, self._notes):
            base = dict(zip((s.key for s in NOTED), C.cell_texts(e.cred, self._now, NOTED), strict=True))
            note = self._notes.get(mark_key(e))
            for col, value in (self.noted(base, note) if note else base).items():
                self.update_cell(key, col, value)
            dirty.append(key)
        self._refresh_rows(dirty)
