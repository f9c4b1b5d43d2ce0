"""The credential table's marks, notes and side columns: what changes beside a row without
the row changing (a tag's mark, a finding's note, a headroom reading, today's spend).

:class:`RowMarks` is the part of :class:`~tui.widgets.table_rows.RowStore` that takes them:
each setter says which formatted rows moved, and makes only their cells again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from tui.text import headroom as headroom_words
from tui.widgets import cells as C
from tui.widgets.cells import ColumnSpec
from tui.widgets.rows import Entry, mark_key
from tui.widgets.table_cells import Cells

if TYPE_CHECKING:
    from tui.widgets.table_cells import CellStore
    from tui.widgets.table_headroom import HeadroomCells
    from tui.widgets.table_spend import SpendCells

# The # column alone, uncut: what a mark change re-renders.
POS = (ColumnSpec("pos", "#", 10**6),)
# The columns a finding's note leads (narrow "code/reason", wide "reason"), uncut.
NOTED = (ColumnSpec("error", "code/reason", 10**6), ColumnSpec("reason", "reason", 10**6))


def noted(cells: Cells, note: str) -> Cells:
    """The reason cells with *note* (a symbol and a word, never colour alone) in front."""
    out = {}
    for spec in NOTED:
        text, style = cells.get(spec.key, (C.NULL, ""))
        out[spec.key] = (note if text in ("", C.NULL) else f"{note} {text}", style)
    return out


class RowMarks:
    """Marks, notes, headroom and spend of the rows a :class:`RowStore` holds."""

    cells: CellStore
    headroom: HeadroomCells
    spend: SpendCells
    _entries: dict[str, Entry]
    _marks: dict[tuple[str, str], str]
    _under: dict[tuple[str, str], str]
    _screen_marks: dict[tuple[str, str], str]
    _notes: dict[tuple[str, str], str]
    materialize: Callable[[str, float], bool]        # RowStore's: format a deferred row

    # ----------------------------------------------------------- marks and notes
    def set_marks(self, marks: dict[tuple[str, str], str] | None, now: float,
                  under: dict[tuple[str, str], str] | None = None) -> list[str]:
        """Show *marks* ((pool, id) -> symbol) in the # cells over *under* (a range mark's);
        either as last given when None. Return the rows whose mark moved."""
        if marks is not None:
            self._screen_marks = {k: v for k, v in marks.items() if v}
        if under is not None:
            self._under = under
        old, self._marks = self._marks, {**self._under, **self._screen_marks}
        dirty = []
        for key, e in self._moved(old, self._marks, now):
            pos = C.credential_cells(e.cred, now, POS, self._marks.get(mark_key(e), ""))
            self.cells.update_cell(key, "pos", (pos[0].plain, ""))
            dirty.append(key)
        return dirty

    def set_notes(self, notes: dict[tuple[str, str], str], now: float) -> list[str]:
        """Show *notes* ((view pool key, id) -> "⚑ shared") before the reason; return the
        rows whose note moved."""
        old, self._notes = self._notes, {k: v for k, v in notes.items() if v}
        dirty = []
        for key, e in self._moved(old, self._notes, now):
            base = dict(zip((s.key for s in NOTED), C.cell_texts(e.cred, now, NOTED), strict=True))
            note = self._notes.get(mark_key(e))
            for col, value in (noted(base, note) if note else base).items():
                self.cells.update_cell(key, col, value)
            dirty.append(key)
        return dirty

    def set_headroom(self, readings: Mapping[tuple[str, str], object], now: float) -> list[str]:
        """Show *readings* ((view pool key, id) -> the sidecar's RowReadings) in the headroom
        column; return the formatted rows whose readings moved."""
        return self._cells(self.headroom.set(readings, now, self._secrets(readings)), now)

    def headroom_due(self, now: float) -> list[str]:
        """Rows whose headroom text changed by itself (a reading gone stale); their keys."""
        return self._cells(self.headroom.due(now, self._secrets(self.headroom.readings)), now)

    def set_spend(self, spend: Mapping | None, over: Sequence | None, now: float) -> list[str]:
        """Show *spend* ((view pool key, id) -> table_spend.Spend) and the rows *over* budget
        (either as before when None) in the spend column; return the formatted rows that moved."""
        return self._cells(self.spend.set(spend, over), now)

    def _spend_cell(self, mk: tuple[str, str], e: Entry, now: float) -> tuple[str, str]:
        readings = headroom_words.bound(self.headroom.of(mk), e.cred.fingerprint) if e.cred else []
        return self.spend.cell(mk, readings, now)

    def _secrets(self, readings: Mapping[tuple[str, str], object]) -> dict[tuple[str, str], str | None]:
        """The secret each shown row with readings holds now ((view pool key, id) -> fingerprint)."""
        return {mk: e.cred.fingerprint for e in self._entries.values()
                if e.cred is not None and (mk := mark_key(e)) in readings} if readings else {}

    def _cells(self, moved: set[tuple[str, str]], now: float) -> list[str]:
        """The headroom and spend cells of the *moved* rows, made again; the formatted ones' keys."""
        dirty = []
        for key, e in self._entries.items() if moved else ():
            if e.cred is not None and (mk := mark_key(e)) in moved:
                self.cells.drop_signature(key)
                if self.cells.formatted(key):
                    self.cells.update_cell(key, "headroom", self.headroom.cell(mk, e.cred.fingerprint, now))
                    self.cells.update_cell(key, "spend", self._spend_cell(mk, e, now))
                    dirty.append(key)
        return dirty

    def _moved(self, old: dict, new: dict, now: float) -> list[tuple[str, Entry]]:
        """(row key, entry) of the credential rows whose mark or note differs in *new*,
        formatted; their signatures are dropped so the next reconcile recomputes them."""
        moved = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
        if not moved:
            return []
        out = [(key, e) for key, e in self._entries.items()
               if e.cred is not None and mark_key(e) in moved]
        for key, _ in out:
            self.cells.drop_signature(key)
        for key, _ in out:
            self.materialize(key, now)
        return out
