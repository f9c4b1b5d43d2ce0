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
from functools import lru_cache
from itertools import count
from typing import Callable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from store.view import CredentialView, PoolView

from ..format import countdown
from . import cells as C
from .rows import Entry, entries, split_key
from .table_layout import PAD, cut_fingerprint, distinct_fingerprints, widths

# Every column either layout can show, uncut: widths are applied when painting.
ALL = tuple({s.key: C.ColumnSpec(s.key, s.label, 10**6) for s in (*C.WIDE, *C.NARROW)}.values())
GROWING = ("label", "message", "error", "fingerprint", "reason", "source")
COLLAPSED_MARK = "▸"


@dataclass(frozen=True)
class Column:
    value: str   # the column key (named like DataTable's ColumnKey.value)
    label: str
    width: int


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


class CredentialTable(ScrollView, can_focus=True):
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
        self._all: list[Entry] = []                 # every wanted row, folded or not
        self._order: list[str] = []                 # rows shown, top to bottom
        self._index: dict[str, int] = {}
        self._entries: dict[str, Entry] = {}
        self._data: dict[str, dict[str, tuple[str, str]]] = {}  # key -> column -> (text, style)
        self._sigs: dict[str, tuple] = {}
        self._versions: dict[str, int] = {}
        self._seq = count(1)
        self._strips: LRUCache[tuple, Strip] = LRUCache(2048)
        self._lengths: dict[str, dict[int, int]] = {k: {} for k in GROWING}
        self._fp_need = 0
        self._layout: tuple[int, ...] = ()
        self._layout_id = 0
        self._full = 0      # painted width of a line: the terminal's, or the columns' if wider
        self._cooling: dict[str, float] = {}
        self._next_flip = math.inf
        self._now = 0.0
        self._marks: dict[tuple[str, str], str] = {}
        self._folded: set[str] = set()
        self.cursor_row = 0
        self._ticker: Callable[[], None] | None = None
        self._timer: Timer | None = None
        self._flip_timer: Timer | None = None
        self._ticking = False

    # ----------------------------------------------------------- queries
    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def columns(self) -> list[Column]:
        return [Column(s.key, s.label, w) for s, w in zip(self.specs, self._widths())]

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

    # ----------------------------------------------------------- reconcile
    def reconcile(
        self, pools: Sequence[PoolView], now: float, *, filter_text: str = "",
        sort: str = "priority",
    ) -> None:
        """Make the table show *pools* (filtered, sorted), touching only what changed."""
        self._apply(entries(pools, filter_text, sort), now, self.cursor_key)

    def clear(self) -> None:
        """Forget every row (a reconcile never needs this)."""
        for key in list(self._data):
            self._forget(key)
        self._all, self._order, self._index, self._entries = [], [], {}, {}
        self._strips.clear()
        self.refresh()

    def _apply(self, wanted: list[Entry], now: float, keep: str | None) -> None:
        self._now = now
        old_index = self._index
        want = {e.key for e in wanted}
        for key in [k for k in self._data if k not in want]:
            self._forget(key)
        fps: dict[tuple[str, str], str] = {}
        by_pool: dict[str, list[CredentialView]] = {}
        for e in wanted:
            if e.cred is not None:
                by_pool.setdefault(e.pool.key, []).append(e.cred)
        for creds in by_pool.values():
            if len({cv.fingerprint for cv in creds}) < len(creds):
                fps.update(distinct_fingerprints(creds))
        cooling: dict[str, float] = {}
        dirty: list[str] = []
        for e in wanted:
            key = e.key
            cv = e.cred
            self._entries[key] = e
            if cv is not None:
                eff = cv.effective
                if eff.status == "cooling" and eff.available_at is not None:
                    cooling[key] = eff.available_at
            sig = self._sig(e, fps)
            if self._sigs.get(key) == sig:
                continue
            self._sigs[key] = sig
            dirty.append(key)
            if key not in self._data:
                self._set_data(key, self._cells(e, now, fps))
                continue
            for col, value in self._cells(e, now, fps).items():
                if self._data[key].get(col) != value:
                    self.update_cell(key, col, value)
        self._cooling = cooling
        self._next_flip = min(cooling.values(), default=math.inf)
        self._fp_need = max((len(f) for f in fps.values()), default=0)
        self._all = wanted
        moved = self._rebuild_order()
        self._relayout()
        self._restore_cursor(keep, old_index)
        if moved:
            self.refresh()
        else:
            self._refresh_rows(dirty)
        self.refresh_countdowns(now)
        self._arm()

    def _sig(self, e: Entry, fps: dict) -> tuple:
        cv = e.cred
        if cv is None:
            return ("hdr", e.pool.strategy, e.pool.strategy_known,
                    tuple(sorted(e.pool.counts.items())), e.pool.key in self._folded)
        return (*C.signature(cv), self._marks.get(cv.key, ""), fps.get(cv.key))

    def _cells(self, e: Entry, now: float, fps: dict) -> dict[str, tuple[str, str]]:
        if e.cred is None:
            return {}  # headers are poured into the current widths when painted
        texts = C.credential_cells(e.cred, now, ALL, self._marks.get(e.cred.key, ""))
        out = {s.key: (t.plain, str(t.style or "")) for s, t in zip(ALL, texts)}
        if e.cred.key in fps:
            out["fingerprint"] = (fps[e.cred.key], "")
        return out

    def update_cell(self, row_key: str, column: str, value: tuple[str, str]) -> None:
        """Set one cell; the row re-renders on its next paint (callers refresh the line)."""
        row = self._data[row_key]
        self._count_length(column, row.get(column), -1)
        row[column] = value
        self._count_length(column, value, +1)
        self._versions[row_key] = next(self._seq)

    def _set_data(self, key: str, row: dict[str, tuple[str, str]]) -> None:
        self._data[key] = row
        for col in GROWING:
            self._count_length(col, row.get(col), +1)
        self._versions[key] = next(self._seq)

    def _forget(self, key: str) -> None:
        row = self._data.pop(key, {})
        for col in GROWING:
            self._count_length(col, row.get(col), -1)
        self._sigs.pop(key, None)
        self._versions.pop(key, None)
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

    def _rebuild_order(self) -> bool:
        """Rows shown after folding; True when the order changed (every line moves)."""
        folded = self._folded
        order = [e.key for e in self._all if e.cred is None or e.pool.key not in folded]
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
        natural = {k: max(v, default=0) for k, v in self._lengths.items()}
        total = max(0, self.scrollable_content_region.width or self.size.width)
        layout = widths(self.specs, total, natural, {"fingerprint": self._fp_need})
        full = max(total, sum(w + 2 * PAD for w in layout))
        if layout != self._layout or full != self._full:
            self._layout, self._full = layout, full
            self._layout_id += 1
            self.virtual_size = Size(sum(w + 2 * PAD for w in layout), len(self._order) + 1)
            self.refresh()

    def on_resize(self, event: events.Resize) -> None:
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

    # ----------------------------------------------------------- painting
    def _cell_texts(self, row_key: str) -> list[str]:
        layout = self._widths()
        e = self._entries[row_key]
        if e.cred is None:
            mark = COLLAPSED_MARK if e.pool.key in self._folded else C.HEADER_MARK
            specs = [C.ColumnSpec(s.key, s.label, w) for s, w in zip(self.specs, layout)]
            return [mark] + C.flow(C.header_tokens(e.pool), [s.width for s in specs[1:]])
        row = self._data[row_key]
        out = []
        for spec, w in zip(self.specs, layout):
            text = row.get(spec.key, (C.NULL, ""))[0]
            out.append(cut_fingerprint(text, w) if spec.key == "fingerprint"
                       else C.ellipsize(text, w))
        return out

    def _render_row(self, row_key: str, cursor: bool) -> Strip:
        """One row as a strip, full width (cropped to the scroll position when painted)."""
        texts = self._cell_texts(row_key)
        e = self._entries[row_key]
        base = self.rich_style
        if e.cred is None:
            base = base + self.get_component_rich_style("credential-table--pool")
        if cursor:
            base = base + self.get_component_rich_style("credential-table--cursor")
        row = self._data.get(row_key, {})
        segs = []
        pad = " " * PAD
        for spec, w, text in zip(self.specs, self._layout, texts):
            style = base
            cell_style = row.get(spec.key, ("", ""))[1]
            if cell_style and not cursor:
                style = base + _style(cell_style)
            segs.append(Segment(pad + text.ljust(w) + pad, style))
        # Padded here, in the row's own style, so a cursor bar spans the whole width.
        return Strip(segs).simplify().extend_cell_length(self._full, base)

    def _render_header(self) -> Strip:
        style = self.rich_style + self.get_component_rich_style("credential-table--header")
        pad = " " * PAD
        text = "".join(pad + s.label.ljust(w)[:w] + pad for s, w in zip(self.specs, self._layout))
        return Strip([Segment(text, style)]).extend_cell_length(self._full, style)

    def render_line(self, y: int) -> Strip:
        self._widths()
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if y == 0:
            strip = self._render_header()
        else:
            i = scroll_y + y - 1
            if i >= len(self._order):
                return Strip.blank(width, self.rich_style)
            key = self._order[i]
            cursor = i == self.cursor_row
            ck = (key, self._versions.get(key, 0), self._layout_id, cursor,
                  self.specs is C.WIDE)
            strip = self._strips.get(ck)
            if strip is None:
                strip = self._render_row(key, cursor)
                self._strips[ck] = strip
        return strip.crop(scroll_x, scroll_x + width)

    def _refresh_rows(self, keys: Sequence[str]) -> None:
        """Repaint just the lines of *keys* that are on screen."""
        top = int(self.scroll_y)
        height = self.size.height
        width = self.size.width
        regions = []
        for key in keys:
            i = self._index.get(key)
            if i is not None and 0 <= i - top < height - 1:
                regions.append(Region(0, i - top + 1, width, 1))
        if regions:
            self.refresh(*regions)

    # ----------------------------------------------------------- marks
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
            if e.cred is None or e.cred.key not in moved:
                continue
            self._sigs.pop(key, None)  # the next reconcile recomputes it
            pos = C.credential_cells(e.cred, self._now, (ALL[0],), self._marks.get(e.cred.key, ""))
            self.update_cell(key, "pos", (pos[0].plain, ""))
            dirty.append(key)
        self._refresh_rows(dirty)

    # ----------------------------------------------------------- cursor
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
        self._sigs.pop(f"pool\x1f{pool}", None)
        self._versions[f"pool\x1f{pool}"] = next(self._seq)
        self._rebuild_order()
        self._restore_cursor(keep if keep in self._index else f"pool\x1f{pool}", {})
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

    # ----------------------------------------------------------- the tick
    def visible_range(self) -> range:
        """Row indices currently on screen."""
        top = int(self.scroll_y)
        return range(top, min(top + max(0, self.size.height - 1), len(self._order)))

    def visible_cooling(self) -> bool:
        order, cooling = self._order, self._cooling
        return any(order[i] in cooling for i in self.visible_range())

    def start_ticking(self, callback: Callable[[], None]) -> None:
        """Call *callback* each second while a cooling row is on screen, else not at all
        (a one-shot timer still fires when an off-screen cooldown ends)."""
        self._ticker = callback
        self._timer = self.set_interval(1.0, callback, pause=True, name="countdown")
        self._arm()

    def _arm(self) -> None:
        if self._timer is None or self._ticker is None:
            return
        self._ticking = self.visible_cooling()
        if self._ticking:
            self._timer.resume()
        else:
            self._timer.pause()
        if self._flip_timer is not None:
            self._flip_timer.stop()
            self._flip_timer = None
        if math.isfinite(self._next_flip) and not self._ticking:
            delay = max(0.05, self._next_flip - self._now + 0.05)
            self._flip_timer = self.set_timer(delay, self._ticker, name="flip")

    @property
    def ticking(self) -> bool:
        """True while the one-second tick runs."""
        return self._ticking

    def tick(self, now: float) -> list[str]:
        """Refresh on-screen countdowns; return the keys whose cooldown has just ended."""
        self._now = now
        flipped: list[str] = []
        if now >= self._next_flip:
            flipped = [k for k, t in self._cooling.items() if t <= now]
            for k in flipped:
                del self._cooling[k]
            self._next_flip = min(self._cooling.values(), default=math.inf)
        self.refresh_countdowns(now)
        self._arm()
        return flipped

    def refresh_countdowns(self, now: float | None = None) -> int:
        """Rewrite the countdown cell of on-screen cooling rows whose text changed."""
        now = self._now if now is None else now
        changed = []
        for i in self.visible_range():
            key = self._order[i]
            t = self._cooling.get(key)
            if t is None:
                continue
            text = countdown(t - now)
            if self._data[key]["left"][0] != text:
                self.write_countdown(key, text)
                changed.append(key)
        self._refresh_rows(changed)
        return len(changed)

    def write_countdown(self, row_key: str, text: str) -> None:
        """Set a countdown cell; the row's version bump re-renders that row alone."""
        self._data[row_key]["left"] = (text, "")
        self._versions[row_key] = next(self._seq)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value) and self._cooling:
            self.refresh_countdowns()
            self._arm()
