"""The credential table's rows: which it shows, in which order, and what their cells say.

:class:`RowStore` takes each pool's rows (whole, or only the rows a write changed), keeps
the order on screen (pools folded or not), the marks and notes shown beside rows, and
the fingerprints that tell clashing keys apart; it writes cells into the table's
:class:`~tui.widgets.table_cells.CellStore` and says which formatted rows must repaint.
It knows nothing of Textual: the widget scrolls, paints and moves the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from store.pools.view import PoolView
from tui.widgets import cells as C
from tui.widgets.rows import Entry, ProfileBanner, entries, header_key, mark_key, patch_entries
from tui.widgets.table_cells import Cells, CellStore, estimate
from tui.widgets.table_headroom import HeadroomCells
from tui.widgets.table_layout import distinct_fingerprints
from tui.widgets.table_spend import SpendCells

# Every column either layout can show, uncut: widths are applied when painting.
ALL = tuple({s.key: C.ColumnSpec(s.key, s.label, 10**6) for s in (*C.WIDE, *C.NARROW, C.HEADROOM, C.SPEND)}.values())
ALL_KEYS = tuple(s.key for s in ALL)

Shown = tuple[PoolView, tuple[str, str, bool], list[Entry]]   # view, (filter, sort, reversed), rows


@dataclass
class Intake:
    """What a reconcile brings: every pool's rows, and which pools are *fresh* (walked
    whole), *patched* (only the rows listed) or *gone*; the rest are as shown last time."""

    blocks: list[tuple[str, list[Entry]]]
    fresh: set[str]
    patched: dict[str, list[Entry]]
    gone: set[str]
    old: dict[str, Shown]   # every pool as shown before this reconcile


class RowStore:
    """Rows by key and in display order, pool by pool, and the text of their cells."""

    def __init__(self, cells: CellStore) -> None:
        self.cells = cells
        self._blocks: list[tuple[str, list[Entry]]] = []   # per pool, every wanted row
        self._order: list[str] = []                         # rows shown, top to bottom
        self._index: dict[str, int] = {}
        self._entries: dict[str, Entry] = {}
        self._folded: set[str] = set()
        # Per pool: the view, filter/sort and entries last shown, and its clashing
        # fingerprints. A pool the loader did not rebuild skips both.
        self._shown: dict[str, Shown] = {}
        self._pool_fps: dict[str, dict[tuple[str, str], str]] = {}
        self._fps: dict[tuple[str, str], str] = {}
        self._marks: dict[tuple[str, str], str] = {}   # shown: the screen's over the range's
        self._under: dict[tuple[str, str], str] = {}   # a range mark's
        self._screen_marks: dict[tuple[str, str], str] = {}
        self._notes: dict[tuple[str, str], str] = {}   # findings: "⚑ shared" before the reason
        self.headroom = HeadroomCells()                # the readings behind the headroom column
        self.spend = SpendCells()                      # today's spend per row (#29)

    # ----------------------------------------------------------- queries
    @property
    def row_count(self) -> int:
        return len(self._order)

    def key_at(self, i: int) -> str:
        return self._order[i]

    def keys_in(self, rows: range) -> list[str]:
        return [self._order[i] for i in rows]

    def order(self) -> list[str]:
        """Row keys in display order (a copy)."""
        return list(self._order)

    def index_of(self, key: str | None) -> int | None:
        return self._index.get(key) if key is not None else None

    def entry(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def is_folded(self, pool: str) -> bool:
        return pool in self._folded

    def header_rows(self) -> list[int]:
        return [i for i, k in enumerate(self._order) if self._entries[k].is_header]

    def first_credential(self) -> int:
        """The first credential's row (a first fill starts there, not on a pool header)."""
        return next((i for i, k in enumerate(self._order) if not self._entries[k].is_header), 0)

    def pool_entries(self, pool: str) -> list[Entry]:
        """The credential rows of *pool* the table holds (the filter's, folded ones too)."""
        hit = self._shown.get(pool)
        return [e for e in hit[2] if e.cred is not None] if hit is not None else []

    def every_key(self) -> list[str]:
        """Every row key in display order, the rows of folded pools included."""
        return [e.key for _, rows in self._blocks for e in rows]

    @property
    def fingerprint_need(self) -> int:
        """Width the longest distinguishing fingerprint needs (0 when no keys clash)."""
        return max((len(f) for f in self._fps.values()), default=0)

    # ----------------------------------------------------------- reconcile
    def intake(self, pools: Sequence[PoolView], filter_text: str, sort: str,
               reverse: bool = False) -> Intake:
        """Each pool's rows under *filter_text* and *sort* (turned round: *reverse*), looking
        only at what changed.

        A pool whose view is the very object shown last time (the loader reuses the
        views of pools nobody wrote to) is not even looked at row by row.
        """
        view = (filter_text, sort, reverse)
        blocks: list[tuple[str, list[Entry]]] = []
        fresh: set[str] = set()
        patched: dict[str, list[Entry]] = {}
        shown: dict[str, Shown] = {}
        for pv in pools:
            hit = self._shown.get(pv.key)
            if hit is not None and hit[0] is pv and hit[1] == view:
                rows = hit[2]
            else:
                # A pool the loader rebuilt reuses the views of rows nobody wrote to: swap
                # in the changed ones when that can move no row, else take it whole.
                got = (patch_entries(hit[0], pv, hit[2], filter_text, sort)
                       if hit is not None and hit[1] == view else None)
                if got is not None:
                    rows, patched[pv.key] = got
                else:
                    rows = entries([pv], filter_text, sort, reverse)
                    fresh.add(pv.key)
            shown[pv.key] = (pv, view, rows)
            blocks.append((pv.key, rows))
        old, self._shown = self._shown, shown
        return Intake(blocks, fresh, patched, old.keys() - shown.keys(), old)

    def apply(self, intake: Intake, now: float) -> tuple[list[str], bool]:
        """Take *intake*: (keys of formatted rows whose cells changed, whether the order
        of rows on screen changed).

        Everything here is O(rows of fresh pools + changed rows + pools): the rows of an
        untouched pool are not even iterated, unless the order of rows on screen changed.
        """
        blocks, fresh, old = intake.blocks, intake.fresh, intake.old
        want = {e.key for p, rows in blocks if p in fresh for e in rows}
        for p in fresh | intake.gone:
            for e in old[p][2] if p in old else ():
                if e.key not in want:
                    self._forget(e.key)
            self._pool_fps.pop(p, None)
            self.cells.drop_estimate(p)
        for p, rows in blocks:
            if p in fresh:
                creds = [e.cred for e in rows if e.cred is not None]
                clash = len({cv.fingerprint for cv in creds}) < len(creds)
                self._pool_fps[p] = distinct_fingerprints(creds) if clash else {}
        fps: dict[tuple[str, str], str] = {}
        for part in self._pool_fps.values():
            fps.update(part)
        self._fps = fps
        dirty: list[str] = []
        for p, rows in blocks:
            if p in fresh:
                dirty += self.take_pool(p, rows, now, fps)
            elif p in intake.patched:
                dirty += self.patch_pool(p, rows, intake.patched[p], now, fps)
        moved = self._blocks_moved(blocks, fresh, old)
        self._blocks = blocks
        return dirty, moved and self.rebuild_order()

    def _blocks_moved(self, blocks: list[tuple[str, list[Entry]]], fresh: set[str],
                      old: dict[str, Shown]) -> bool:
        """Could the order of rows have changed? (pools came, went or moved, or a fresh
        pool's rows differ in keys or order); False lets a reconcile skip the O(rows) rebuild."""
        if [p for p, _ in blocks] != [p for p, _ in self._blocks]:
            return True
        return any(p not in old or [e.key for e in rows] != [e.key for e in old[p][2]]
                   for p, rows in blocks if p in fresh)

    def rebuild_order(self) -> bool:
        """Rows shown after folding; True when the order changed (every line moves)."""
        folded = self._folded
        order = [e.key for _, rows in self._blocks for e in rows
                 if e.cred is None or e.pool.key not in folded]
        if order == self._order:
            return False
        self._order = order
        self._index = {k: i for i, k in enumerate(order)}
        return True

    def fold(self, pool: str, folded: bool) -> bool:
        """Collapse (True) or expand a pool's rows under its header; True if that changed."""
        if (pool in self._folded) == folded:
            return False
        (self._folded.add if folded else self._folded.discard)(pool)
        self.cells.drop_signature(header_key(pool))
        self.cells.touch(header_key(pool))
        self.rebuild_order()
        return True

    def clear(self) -> None:
        """Forget every row (folds, marks and notes stay)."""
        self.cells.clear()
        self._blocks, self._order, self._index, self._entries = [], [], {}, {}
        self._shown, self._pool_fps = {}, {}

    # ----------------------------------------------------------- one pool, one row
    def take_pool(self, pool: str, rows: list[Entry], now: float, fps: dict) -> list[str]:
        """Take one fresh pool's rows; return the keys of formatted rows whose cells changed."""
        dirty: list[str] = []
        deferred = [e for e in rows if self.take(e, now, fps, dirty)]
        if deferred:
            self.cells.set_estimate(pool, estimate(deferred, fps, self._notes))
        return dirty

    def patch_pool(self, pool: str, rows: list[Entry], changed: list[Entry], now: float,
                   fps: dict) -> list[str]:
        """Take only the *changed* rows of a pool whose rows kept their keys and order
        (:func:`patch_entries`): a write to one row of 500 looks at that row.

        A changed row that stays unformatted moves its pool's width estimate: up at once;
        down only by counting the pool's unformatted rows again, when it was the longest.
        """
        dirty: list[str] = []
        est = self.cells.estimate_of(pool)
        recount = False
        for e in changed:
            was = self._entries.get(e.key)
            if not self.take(e, now, fps, dirty):
                continue
            new = estimate((e,), fps, self._notes)
            old = estimate((was,), fps, self._notes) if was is not None and was.cred else new
            if est is None:
                recount = True
                continue
            for col, n in new.items():
                if n > est[col]:
                    self.cells.raise_estimate(pool, col, n)
                elif old[col] > n and old[col] >= est[col]:
                    recount = True  # the longest row got shorter
        if recount:
            deferred = [e for e in rows if self.cells.deferred(e.key)]
            self.cells.set_estimate(pool, estimate(deferred, fps, self._notes))
        return dirty

    def take(self, e: Entry, now: float, fps: dict, dirty: list[str]) -> bool:
        """Take one row: record it and bring its cells up to date (adding its key to
        *dirty* if a formatted row changed). True when the row is left unformatted
        until shown."""
        key = e.key
        cells = self.cells
        self._entries[key] = e
        if e.cred is not None and not cells.formatted(key):
            cells.defer(key)   # formatted when first shown
            return True
        sig = self.signature(e, fps)
        if cells.signature(key) == sig:
            return False
        dirty.append(key)
        if not cells.formatted(key):
            cells.set_row(key, self.format_row(e, now, fps), sig)
            return False
        cells.set_signature(key, sig)
        if e.cred is None:
            # A header holds no cells (its words are poured in when painted): a new
            # version is what makes its line render again with the new counts.
            cells.touch(key)
            return False
        row = cells.row(key)
        for col, value in self.format_row(e, now, fps).items():
            if row.get(col) != value:
                cells.update_cell(key, col, value)
        return False

    def materialize(self, key: str, now: float) -> bool:
        """Format a deferred row; False if it was not deferred."""
        if not self.cells.deferred(key):
            return False
        e = self._entries[key]
        self.cells.set_row(key, self.format_row(e, now, self._fps), self.signature(e, self._fps))
        return True

    def signature(self, e: Entry, fps: dict) -> tuple:
        """Everything the row's cells depend on but the clock: equal means equal cells."""
        cv = e.cred
        if isinstance(e.pool, ProfileBanner):
            return ("banner", e.pool.tokens, e.pool.error)
        if cv is None:
            c = e.pool.counts       # the time only when nothing is usable (one walk of the pool)
            return ("hdr", e.pool.strategy, e.pool.strategy_known, tuple(sorted(c.items())), e.pool.key
                    in self._folded, None if c["ok"] or c["ready"] else e.pool.next_available_at)
        mk = mark_key(e)
        return (*C.signature(cv), self._marks.get(mk, ""), self._notes.get(mk, ""), fps.get(cv.key),
                self.headroom.of(mk), self.spend.of(mk))

    def format_row(self, e: Entry, now: float, fps: dict) -> Cells:
        """A credential row's cells, uncut (a header's are poured in when painted)."""
        if e.cred is None:
            return {}
        mk = mark_key(e)
        texts = C.cell_texts(e.cred, now, ALL, self._marks.get(mk, ""))
        out = dict(zip(ALL_KEYS, texts, strict=True))
        note = self._notes.get(mk)
        if note:
            out.update(C.noted(out, note))
        out["headroom"] = self.headroom.cell(mk, e.cred.fingerprint, now)
        out["spend"] = self.spend.cell(mk, self.headroom.of(mk), e.cred, now)
        if e.cred.key in fps:
            out["fingerprint"] = (fps[e.cred.key], "")
        return out

    def _forget(self, key: str) -> None:
        self.cells.forget(key)
        self._entries.pop(key, None)

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
            pos = C.credential_cells(e.cred, now, C.POS, self._marks.get(mark_key(e), ""))
            self.cells.update_cell(key, "pos", (pos[0].plain, ""))
            dirty.append(key)
        return dirty

    def set_notes(self, notes: dict[tuple[str, str], str], now: float) -> list[str]:
        """Show *notes* ((view pool key, id) -> "⚑ shared") before the reason; return the
        rows whose note moved."""
        old, self._notes = self._notes, {k: v for k, v in notes.items() if v}
        dirty = []
        for key, e in self._moved(old, self._notes, now):
            base = dict(zip((s.key for s in C.NOTED), C.cell_texts(e.cred, now, C.NOTED), strict=True))
            note = self._notes.get(mark_key(e))
            for col, value in (C.noted(base, note) if note else base).items():
                self.cells.update_cell(key, col, value)
            dirty.append(key)
        return dirty

    def set_headroom(self, readings: Mapping[tuple[str, str], object], now: float) -> list[str]:
        """Show *readings* ((view pool key, id) -> the sidecar's RowReadings) in the headroom
        column; return the formatted rows whose readings moved."""
        moved = self.headroom.set(readings, now, self._secrets(readings))
        self.spend.subscribed((mk, cv, readings[mk]) for mk, cv in self._with_readings(readings))
        return self._side_cells(moved, now)

    def headroom_due(self, now: float) -> list[str]:
        """Rows whose headroom text changed by itself (a reading gone stale); their keys."""
        return self._side_cells(self.headroom.due(now, self._secrets(self.headroom.readings)), now)

    def set_spend(self, spend: Mapping | None, over: Sequence | None, now: float) -> list[str]:
        """Show *spend* ((view pool key, id) -> table_spend.Spend) and the rows *over* budget
        (either as before when None) in the spend column; return the formatted rows that moved."""
        return self._side_cells(self.spend.set(spend, over), now)

    def _secrets(self, readings: Mapping[tuple[str, str], object]) -> dict[tuple[str, str], str | None]:
        """The secret each shown row with readings holds now ((view pool key, id) -> fingerprint)."""
        return {mk: cv.fingerprint for mk, cv in self._with_readings(readings)}

    def _with_readings(self, readings: Mapping[tuple[str, str], object]) -> list[tuple[tuple[str, str], Any]]:
        """((view pool key, id), credential) of each shown row with readings."""
        return [(mk, e.cred) for e in self._entries.values()
                if e.cred is not None and (mk := mark_key(e)) in readings] if readings else []

    def _side_cells(self, moved: set[tuple[str, str]], now: float) -> list[str]:
        """The headroom and spend cells of the *moved* rows, made again; the formatted ones' keys."""
        dirty = []
        for key, e in self._entries.items() if moved else ():
            if e.cred is not None and (mk := mark_key(e)) in moved:
                self.cells.drop_signature(key)
                if self.cells.formatted(key):
                    self.cells.update_cell(key, "headroom", self.headroom.cell(mk, e.cred.fingerprint, now))
                    self.cells.update_cell(key, "spend", self.spend.cell(mk, self.headroom.of(mk), e.cred, now))
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
