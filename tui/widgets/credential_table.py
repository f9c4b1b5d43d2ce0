"""The one table of every pool's credentials: a Line API widget whose cost follows what changed.

Each row is rendered to a :class:`Strip` once per change of that row and kept in an
LRU cache keyed by (row key, row version, column layout, cursor), the way Textual's
own ``Log`` stays fast. A reload bumps the version of the rows that changed and
repaints only their lines; a countdown tick rewrites one cell's text per visible
cooling row; scrolling reuses the cached strips. Nothing walks the whole table to
paint, so 10,000 rows cost what 40 visible rows cost.

Cells are plain text (never parsed as markup): a label ``[/]`` shows as ``[/]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import count
from typing import Callable, Sequence

from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from store.pools.view import CredentialView, PoolView
from tui.widgets import cells as C
from tui.widgets.rows import Entry, ProfileBanner, entries, mark_key, patch_entries, split_key
from tui.widgets.table_cells import GROWING, RowCells
from tui.widgets.table_layout import PAD, distinct_fingerprints, widths
from tui.widgets.table_nav import TableNavigation
from tui.widgets.table_paint import RowPainting
from tui.widgets.table_pools import PoolRows
from tui.widgets.table_tick import CountdownTick

# Every column either layout can show, uncut: widths are applied when painting.
ALL = tuple({s.key: C.ColumnSpec(s.key, s.label, 10**6) for s in (*C.WIDE, *C.NARROW)}.values())
ALL_KEYS = tuple(s.key for s in ALL)


@dataclass(frozen=True)
class Column:
    value: str   # the column key (named like DataTable's ColumnKey.value)
    label: str
    width: int


class CredentialTable(PoolRows, RowCells, RowPainting, TableNavigation, CountdownTick, ScrollView,
                      can_focus=True):
    """Keyed reconcile, per-row strip cache, pool headers that fold, htop-style cursor."""

    DEFAULT_CSS = """
    CredentialTable { scrollbar-size-vertical: 1; height: 1fr; background: $surface; }
    CredentialTable > .credential-table--header { text-style: bold; background: $panel; }
    CredentialTable > .credential-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: bold;
    }
    CredentialTable > .credential-table--pool { text-style: bold; }
    """
    COMPONENT_CLASSES = {"credential-table--header", "credential-table--cursor",
                         "credential-table--pool"}
    BINDINGS = [
        Binding("enter", "select_cursor", "Open detail / fold pool", show=False,
                id="table.select"),
        Binding("up", "cursor_up", "Cursor up", show=False, id="table.up"),
        Binding("down", "cursor_down", "Cursor down", show=False, id="table.down"),
        Binding("left", "cursor_left", "Fold pool / scroll left", show=False, id="table.left"),
        Binding("right", "cursor_right", "Unfold pool / scroll right", show=False,
                id="table.right"),
        Binding("pageup", "page_up", "Page up", show=False, id="table.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="table.page_down"),
        Binding("home,ctrl+home", "first_row", "First row", show=False, id="table.top"),
        Binding("end,ctrl+end", "last_row", "Last row", show=False, id="table.bottom"),
        Binding("left_square_bracket", "prev_pool", "Previous pool", show=False,
                key_display="[", id="table.prev_pool"),
        Binding("right_square_bracket", "next_pool", "Next pool", show=False,
                key_display="]", id="table.next_pool"),
    ]

    class RowHighlighted(Message):
        """The cursor moved to another row."""

        def __init__(self, row_key: str | None) -> None:
            super().__init__()
            self.row_key = row_key

    class RowSelected(Message):
        """Enter on a credential row."""

        def __init__(self, row_key: str) -> None:
            super().__init__()
            self.row_key = row_key

    def __init__(self, *, wide: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.wide = wide
        self.specs: tuple[C.ColumnSpec, ...] = C.WIDE if wide else C.NARROW
        self._blocks: list[tuple[str, list[Entry]]] = []   # per pool, every wanted row
        self._order: list[str] = []                 # rows shown, top to bottom
        self._index: dict[str, int] = {}
        self._entries: dict[str, Entry] = {}
        self._data: dict[str, dict[str, tuple[str, str]]] = {}  # key -> column -> (text, style)
        self._lazy: set[str] = set()               # rows not formatted yet (table_cells)
        self._pool_est: dict[str, dict[str, int]] = {}  # per pool: its deferred rows' lengths
        self._fps: dict[tuple[str, str], str] = {}
        self._sigs: dict[str, tuple] = {}
        self._versions: dict[str, int] = {}
        self._seq = count(1)
        self._strips: LRUCache[tuple, Strip] = LRUCache(2048)
        # Per row, all but the countdown cell; keyed by _cells_v, which a tick leaves alone.
        self._frames: LRUCache[tuple, tuple] = LRUCache(2048)
        self._cells_v: dict[str, int] = {}
        self._base_styles: dict[tuple[bool, bool], Style] = {}
        self._lengths: dict[str, dict[int, int]] = {k: {} for k in GROWING}
        self._fp_need = 0
        self._layout: tuple[int, ...] = ()
        self._layout_id = 0
        self._full = 0      # painted width of a line: the terminal's, or the columns' if wider
        self._cooling: dict[str, float] = {}
        self._pool_flip: dict[str, float] = {}     # per pool: its soonest cooldown end
        self._next_flip = math.inf
        self._now = 0.0
        self._marks: dict[tuple[str, str], str] = {}
        self._notes: dict[tuple[str, str], str] = {}   # findings: "⚑ shared" before the reason
        self._folded: set[str] = set()
        # Per pool: the view, filter/sort and entries last shown; clashing fingerprints;
        # cooling rows. A pool the loader did not rebuild skips all three.
        self._pool_memo: dict[str, tuple[PoolView, tuple[str, str], list[Entry]]] = {}
        self._pool_fps: dict[str, dict[tuple[str, str], str]] = {}
        self._pool_cooling: dict[str, dict[str, float]] = {}
        self.cursor_row = 0
        self._ticker: Callable[[], None] | None = None
        self._timer: Timer | None = None
        self._clock: Callable[[], float] | None = None   # the screen's clock (start_ticking)
        self._ticking = False

    # ----------------------------------------------------------- queries
    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def columns(self) -> list[Column]:
        return [Column(s.key, s.label, w) for s, w in zip(self.specs, self._widths(), strict=True)]

    @property
    def cursor_key(self) -> str | None:
        """Row key under the cursor (None for an empty table)."""
        if not self._order:
            return None
        return self._order[min(max(self.cursor_row, 0), len(self._order) - 1)]

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

    def credential_key(self, row_key: str) -> tuple[str, str] | None:
        return split_key(row_key)

    def cooling_keys(self) -> dict[str, float]:
        return dict(self._cooling)

    # ----------------------------------------------------------- reconcile
    def reconcile(
        self, pools: Sequence[PoolView], now: float, *, filter_text: str = "",
        sort: str = "priority",
    ) -> None:
        """Make the table show *pools* (filtered, sorted), touching only what changed.

        A pool whose view is the very object shown last time (the loader reuses the
        views of pools nobody wrote to) is not even looked at row by row.
        """
        view = (filter_text, sort)
        blocks: list[tuple[str, list[Entry]]] = []
        fresh: set[str] = set()
        patched: dict[str, list[Entry]] = {}
        memo: dict[str, tuple[PoolView, tuple[str, str], list[Entry]]] = {}
        for pv in pools:
            hit = self._pool_memo.get(pv.key)
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
                    rows = entries([pv], filter_text, sort)
                    fresh.add(pv.key)
            memo[pv.key] = (pv, view, rows)
            blocks.append((pv.key, rows))
        old, self._pool_memo = self._pool_memo, memo
        self._apply(blocks, now, self.cursor_key, fresh, old, patched)

    def clear(self) -> None:
        """Forget every row (a reconcile never needs this)."""
        for key in [*self._data, *self._lazy]:
            self._forget(key)
        self._blocks, self._order, self._index, self._entries = [], [], {}, {}
        self._pool_memo, self._pool_fps, self._pool_cooling = {}, {}, {}
        self._pool_est, self._pool_flip, self._cooling = {}, {}, {}
        self._strips.clear()
        self._frames.clear()
        self.refresh()

    def _apply(self, blocks: list[tuple[str, list[Entry]]], now: float, keep: str | None,
               fresh: set[str], old: dict[str, tuple[PoolView, tuple[str, str], list[Entry]]],
               patched: dict[str, list[Entry]] | None = None) -> None:
        """Show *blocks* (each pool's rows); only the pools in *fresh* are looked at row by
        row, and of the pools in *patched* only the rows listed there.

        Everything here is O(rows of fresh pools + changed rows + pools): the rows of an
        untouched pool are not even iterated, unless the order of rows on screen changed.
        """
        patched = patched or {}
        self._now = now
        old_index = self._index
        touched = fresh | (old.keys() - self._pool_memo.keys())
        want = {e.key for p, rows in blocks if p in fresh for e in rows}
        for p in touched:
            for e in old[p][2] if p in old else ():
                if e.key not in want:
                    self._forget(e.key)
            self._pool_fps.pop(p, None)
            self._pool_est.pop(p, None)
            self._pool_flip.pop(p, None)
            for k in self._pool_cooling.pop(p, {}):
                self._cooling.pop(k, None)
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
                dirty += self._apply_pool(p, rows, now, fps)
            elif p in patched:
                dirty += self._patch_pool(p, rows, patched[p], now, fps)
        self._next_flip = min(self._pool_flip.values(), default=math.inf)
        self._fp_need = max((len(f) for f in fps.values()), default=0)
        moved = self._blocks_moved(blocks, fresh, old)
        self._blocks = blocks
        moved = moved and self._rebuild_order()
        self.materialize_visible()
        self._relayout()
        self._restore_cursor(keep, old_index)
        if moved:
            self.refresh()
        else:
            self._refresh_rows(dirty)
        self.refresh_countdowns(now)
        self._arm()

    def _blocks_moved(self, blocks: list[tuple[str, list[Entry]]], fresh: set[str],
                      old: dict[str, tuple[PoolView, tuple[str, str], list[Entry]]]) -> bool:
        """Could the order of rows have changed? (pools came, went or moved, or a fresh
        pool's rows differ in keys or order); False lets a reconcile skip the O(rows) rebuild."""
        if [p for p, _ in blocks] != [p for p, _ in self._blocks]:
            return True
        return any(p not in old or [e.key for e in rows] != [e.key for e in old[p][2]]
                   for p, rows in blocks if p in fresh)

    def _sig(self, e: Entry, fps: dict) -> tuple:
        cv = e.cred
        if isinstance(e.pool, ProfileBanner):
            return ("banner", e.pool.tokens, e.pool.error)
        if cv is None:
            return ("hdr", e.pool.strategy, e.pool.strategy_known,
                    tuple(sorted(e.pool.counts.items())), e.pool.key in self._folded)
        mk = mark_key(e)
        return (*C.signature(cv), self._marks.get(mk, ""), self._notes.get(mk, ""), fps.get(cv.key))

    def _cells(self, e: Entry, now: float, fps: dict) -> dict[str, tuple[str, str]]:
        if e.cred is None:
            return {}  # headers are poured into the current widths when painted
        mk = mark_key(e)
        texts = C.cell_texts(e.cred, now, ALL, self._marks.get(mk, ""))
        out = dict(zip(ALL_KEYS, texts, strict=True))
        note = self._notes.get(mk)
        if note:
            out.update(self.noted(out, note))
        if e.cred.key in fps:
            out["fingerprint"] = (fps[e.cred.key], "")
        return out

    def _rebuild_order(self) -> bool:
        """Rows shown after folding; True when the order changed (every line moves)."""
        folded = self._folded
        order = [e.key for _, rows in self._blocks for e in rows
                 if e.cred is None or e.pool.key not in folded]
        if order == self._order:
            return False
        self._order = order
        self._index = {k: i for i, k in enumerate(order)}
        self.virtual_size = Size(self.virtual_size.width, len(order) + 1)
        return True

    # ----------------------------------------------------------- layout
    def _widths(self) -> tuple[int, ...]:
        if not self._layout:
            self._relayout()
        return self._layout

    def _relayout(self) -> None:
        """Recompute column widths; only a real change invalidates the cached strips."""
        natural = self._natural()
        total = max(0, self.scrollable_content_region.width or self.size.width)
        layout = widths(self.specs, total, natural, {"fingerprint": self._fp_need})
        full = max(total, sum(w + 2 * PAD for w in layout))
        if layout != self._layout or full != self._full:
            self._layout, self._full = layout, full
            self._layout_id += 1
            self.virtual_size = Size(sum(w + 2 * PAD for w in layout), len(self._order) + 1)
            self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.materialize_visible()
        self._relayout()
        self._arm()

    def set_wide(self, wide: bool) -> None:
        """Switch layout (a user toggle): every line repaints once."""
        if wide == self.wide:
            return
        self.wide = wide
        self.specs = C.WIDE if wide else C.NARROW
        self._relayout()
        self.refresh()
