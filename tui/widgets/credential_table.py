"""The one table of every pool's credentials: a Line API widget whose cost follows what changed.

Each row is rendered to a :class:`Strip` once per change of that row and cached by row
version, the way Textual's own ``Log`` stays fast. A reload bumps the version of the
rows that changed and repaints only their lines; a countdown tick rewrites one cell's
text per visible cooling row; scrolling reuses the cached strips. Nothing walks the
whole table to paint, so 10,000 rows cost what 40 visible rows cost.

The widget scrolls and says which lines to repaint; the state is held by the helpers it
owns, as Textual's ``TextArea`` owns its history and navigator: :attr:`rows` (which rows,
in which order, what their cells say), :attr:`cells` (formatted cells, versions, lengths),
:attr:`countdowns` (cooling rows, the one timer), :attr:`painter` (strips and their
cache), :attr:`column_layout` (which columns, how wide) and :attr:`cursor` (where moves go,
the range mark).

Cells are plain text (never parsed as markup): a label ``[/]`` shows as ``[/]``.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from store.pools.view import CredentialView, PoolView
from tui.widgets.rows import Entry, header_key
from tui.widgets.table_cells import CellStore
from tui.widgets.table_clock import CountdownClock
from tui.widgets.table_cursor import TABLE_BINDINGS, RowMessage, TableCursor, Window
from tui.widgets.table_layout import Column, ColumnLayout
from tui.widgets.table_notes import FINDINGS, RowNotes
from tui.widgets.table_paint import CURSOR, HEADER, POOL, RowPainter
from tui.widgets.table_rows import RowStore


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
    COMPONENT_CLASSES = {HEADER, CURSOR, POOL}
    BINDINGS = TABLE_BINDINGS

    class RowHighlighted(RowMessage):
        """The cursor moved to another row."""

    class RowSelected(RowMessage):
        """Enter on a credential row."""

    def __init__(self, *, wide: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.column_layout = ColumnLayout(wide)
        self.cells = CellStore()
        self.rows = RowStore(self.cells)
        self.countdowns = CountdownClock()
        self.painter = RowPainter(self.rows, self.cells, self.column_layout, self._style_of)
        self.cursor = TableCursor(self.rows)
        self.notes = RowNotes()        # each source's notes before the reason
        self.reverse = False   # each pool's order turned round, from the next reconcile on

    def _style_of(self, component: str | None) -> Style:
        return self.rich_style if component is None else self.get_component_rich_style(component)

    # ----------------------------------------------------------- queries
    @property
    def wide(self) -> bool:
        return self.column_layout.wide

    @property
    def row_count(self) -> int:
        return self.rows.row_count

    @property
    def columns(self) -> list[Column]:
        self._fit()
        return self.column_layout.columns

    @property
    def cursor_row(self) -> int:
        return self.cursor.row

    @property
    def cursor_key(self) -> str | None:
        """Row key under the cursor (None for an empty table)."""
        return self.cursor.key

    @property
    def cursor_entry(self) -> Entry | None:
        return self.cursor.entry

    @property
    def cursor_credential(self) -> CredentialView | None:
        return entry.cred if (entry := self.cursor.entry) is not None else None

    def entry(self, row_key: str) -> Entry | None:
        """What the row *row_key* shows (a pool header or a credential)."""
        return self.rows.entry(row_key)

    @property
    def order(self) -> list[str]:
        """Row keys in display order (a copy)."""
        return self.rows.order()

    def cooling_keys(self) -> dict[str, float]:
        return self.countdowns.cooling_keys()

    def cell_text(self, row_key: str, column: str) -> str:
        """The text *column* of *row_key* shows at the current width."""
        texts = self.row_texts(row_key)
        return texts[self.column_layout.keys.index(column)]

    def row_texts(self, row_key: str) -> list[str]:
        self._fit()
        self._format(row_key)
        return self.painter.texts(row_key)

    def line_text(self, row_key: str) -> str:
        """The row as currently painted ('' when scrolled out of view)."""
        y = self._window().line_of(self.rows.index_of(row_key))
        return self.render_line(y).text if y is not None else ""

    def _window(self) -> Window:
        return Window(int(self.scroll_y), self.size.height)

    def visible_range(self) -> range:
        """Row indices currently on screen."""
        return self._window().rows(self.rows.row_count)

    def _visible_keys(self) -> list[str]:
        return self.rows.keys_in(self.visible_range())

    def visible_cooling(self) -> bool:
        return self.countdowns.cooling_among(self._visible_keys())

    # ----------------------------------------------------------- reconcile
    def reconcile(self, pools: Sequence[PoolView], now: float, *, filter_text: str = "",
                  sort: str = "priority") -> None:
        """Make the table show *pools* (filtered, sorted), touching only what changed:
        a pool nobody wrote to is not looked at, and of a pool a write touched only the
        rows it changed, unless that could move a row."""
        keep = self.cursor_key
        old_row = self.rows.index_of(keep)
        intake = self.rows.intake(pools, filter_text, sort, self.reverse)
        self.countdowns.now = now
        dirty, moved = self.rows.apply(intake, now)
        self.countdowns.take(intake)
        if moved:
            self.virtual_size = Size(self.virtual_size.width, self.rows.row_count + 1)
        self.materialize_visible()
        self.relayout()
        if self.rows.row_count:
            self.move_cursor(row=self.cursor.restored(keep, old_row))
        if moved and self.range_active:
            self._show_range()
        if moved:
            self.refresh()
        else:
            self.refresh_rows(dirty)
        self.refresh_countdowns(now)
        self._arm()

    def clear(self) -> None:
        """Forget every row (a reconcile never needs this)."""
        self.rows.clear()
        self.countdowns.clear()
        self.painter.clear()
        self.refresh()

    def set_marks(self, marks: dict[tuple[str, str], str]) -> None:
        """Show *marks* ((pool, id) -> symbol) in the # cells; only rows whose mark moved change."""
        self.refresh_rows(self.rows.set_marks(marks, self.countdowns.now))

    @property
    def range_active(self) -> bool:
        return self.cursor.anchor is not None

    def mark_range(self, on: bool) -> list[Entry]:
        """Start a range mark on the cursor's row (to wherever the cursor goes), or end it;
        the credential rows it held."""
        held = self.cursor.range_entries()
        self.cursor.anchor = self.cursor_key if on else None
        self._show_range()
        return held

    def _show_range(self) -> None:
        self.refresh_rows(self.rows.set_marks(None, self.countdowns.now, self.cursor.range_marks()))

    def set_notes(self, notes: dict[tuple[str, str], str], kind: str = FINDINGS) -> None:
        """Show *notes* ((view pool key, id) -> "⚑ shared") of one *kind* before the reason, the
        other kinds' kept (tui.widgets.table_notes); only moved rows change."""
        self.refresh_rows(self.rows.set_notes(self.notes.set(kind, notes), self.countdowns.now))

    def set_headroom(self, readings: Mapping[tuple[str, str], object]) -> None:
        """Show *readings* ((view pool key, id) -> the sidecar's RowReadings) in the headroom
        column: only moved rows change (the same mapping again costs nothing)."""
        if readings is self.rows.headroom.readings:
            return
        need = (self.rows.headroom.need, self.rows.spend.need)    # a subscription's use joins spend
        self._headroom(self.rows.set_headroom(readings, self.countdowns.current()), need)

    def _headroom(self, dirty: list[str], need: tuple[int, int] | None = None) -> None:
        if need != (self.rows.headroom.need, self.rows.spend.need):
            self.relayout()     # the column comes with the first reading, and its width may move
        self.refresh_rows(dirty)
        now = self.countdowns.current()
        self.rows.headroom.arm(self.set_timer, lambda: self._headroom(self.rows.headroom_due(
            self.countdowns.current())), now)

    def set_spend(self, spend: Mapping[tuple[str, str], object] | None = None,
                  over: Sequence[tuple[str, str]] | None = None) -> None:
        """Show today's *spend* ((view pool key, id) -> table_spend.Spend) and the rows *over*
        budget (either as before when None) in the spend column: only moved rows change."""
        need = self.rows.spend.need
        dirty = self.rows.set_spend(spend, over, self.countdowns.current())
        if need != self.rows.spend.need:
            self.relayout()     # the column comes with the first figure, and its width may move
        self.refresh_rows(dirty)

    def materialize_visible(self) -> bool:
        """Format the deferred rows on screen (and under the cursor); True if any was."""
        keys = self._visible_keys()
        if (cursor := self.cursor_key) is not None:
            keys.append(cursor)
        return any([self._format(k) for k in keys])

    def _format(self, row_key: str) -> bool:
        """Format the row now if it was deferred (True if it was)."""
        return self.rows.materialize(row_key, self.countdowns.now)

    # ----------------------------------------------------------- layout
    def _fit(self) -> None:
        if not self.column_layout.fitted:
            self.relayout()

    def relayout(self) -> None:
        """Recompute column widths; only a real change invalidates the cached strips. The
        columns leave the scrollbar's cell free even when every row fits: a scrollbar that
        comes and goes with a filter or a reload must not move every column by one."""
        line = max(0, self.scrollable_content_region.width or self.size.width)
        total = max(0, self.size.width - self.styles.scrollbar_size_vertical)
        natural = {**self.cells.natural(), "headroom": self.rows.headroom.need, "spend": self.rows.spend.need}
        if self.column_layout.fit(total, natural, self.rows.fingerprint_need, line):
            self.virtual_size = Size(self.column_layout.used, self.rows.row_count + 1)
            self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self.materialize_visible()
        self.relayout()
        self._arm()

    def set_wide(self, wide: bool) -> None:
        """Every column (True) or the layout before (a user toggle): every line repaints once."""
        self._new_layout(self.column_layout.set_wide(wide))

    def set_columns(self, keys: Sequence[str] | None) -> None:
        """Show the columns *keys* (the column chooser's), or as many as fit (None)."""
        self._new_layout(self.column_layout.choose(keys))

    def _new_layout(self, changed: bool) -> None:
        if changed:
            self.relayout()
            self.refresh()

    # ----------------------------------------------------------- painting
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.painter.restyle()

    def render_line(self, y: int) -> Strip:
        self._fit()
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if y == 0:
            strip = self.painter.header()
        else:
            i = scroll_y + y - 1
            if i >= self.rows.row_count:
                return Strip.blank(width, self.rich_style)
            key = self.rows.key_at(i)
            self._format(key)  # shown before a scroll or resize formatted it
            strip = self.painter.line(key, i == self.cursor_row)
        return strip.crop(scroll_x, scroll_x + width)

    def refresh_rows(self, keys: Sequence[str]) -> None:
        """Repaint just the lines of *keys* that are on screen. Whole lines, even for a
        countdown: Textual repaints a dirty line from the start of the widget's strip up to
        the region's end anyway, and cropping the strip to a cell costs more than it saves
        (headless A/B at 1,000 keys: 3.0-3.2 ms a tick for lines vs 3.6-4.5 ms for cells)."""
        window, width = self._window(), self.size.width
        lines = [window.line_of(self.rows.index_of(key)) for key in keys]
        regions = [Region(0, y, width, 1) for y in lines if y is not None]
        if regions:
            self.refresh(*regions)

    # ----------------------------------------------------------- countdowns
    def start_ticking(self, callback: Callable[[], None],
                      clock: Callable[[], float] | None = None) -> None:
        """Call *callback* whenever a visible countdown's text changes or a cooldown ends.
        *clock* is the screen's: the table's own last time may be old after a quiet spell."""
        self.countdowns.start(callback, clock, self.set_timer)
        self._arm()

    def _arm(self) -> None:
        self.countdowns.arm(self._visible_keys())

    def tick(self, now: float) -> list[str]:
        """Refresh on-screen countdowns; return the keys whose cooldown has just ended."""
        flipped = self.countdowns.flip(now)
        self.refresh_countdowns(now)
        self._arm()
        return flipped

    def refresh_countdowns(self, now: float) -> None:
        """Rewrite the countdown cell of on-screen cooling rows whose text changed."""
        stale = self.countdowns.stale(now, self._visible_keys(), self._countdown_text)
        for key, text in stale:
            self.cells.write_countdown(key, text)
        self.refresh_rows([key for key, _ in stale])

    def _countdown_text(self, row_key: str) -> str:
        self._format(row_key)
        return self.cells.row(row_key)["left"][0]

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            if self.materialize_visible():
                self.relayout()
            if self.countdowns.any_cooling:
                self.refresh_countdowns(self.countdowns.current())
                self._arm()

    # ----------------------------------------------------------- cursor and folding
    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        if not self.rows.row_count:
            return
        if moved := self.cursor.move(row):
            self.refresh_rows(moved)
            if self.range_active:
                self._show_range()
            self.post_message(self.RowHighlighted(moved[-1]))
        if scroll and (y := self._window().scroll_for(self.cursor.row)) is not None:
            self.scroll_to(y=y, animate=False, immediate=True)

    def move_to_key(self, row_key: str) -> bool:
        if (idx := self.rows.index_of(row_key)) is not None:
            self.move_cursor(row=idx)
        return idx is not None

    def fold(self, pool: str, folded: bool) -> None:
        """Collapse (True) or expand a pool's rows under its header; the cursor stays on it."""
        keep = self.cursor_key
        if not self.rows.fold(pool, folded):
            return
        self.virtual_size = Size(self.virtual_size.width, self.rows.row_count + 1)
        keep = keep if self.rows.index_of(keep) is not None else header_key(pool)
        self.move_cursor(row=self.cursor.restored(keep, None))
        if self.materialize_visible():
            self.relayout()
        self.refresh()
        self._arm()

    def action_move(self, where: str) -> None:
        """Up, down, a page either way, the first or last row, the pool header above or below."""
        if (row := self.cursor.target(where, self._window().page)) is not None:
            self.move_cursor(row=row)

    def action_select_cursor(self) -> None:
        e = self.cursor_entry
        if e is None:
            return
        if e.is_header:
            self.fold(e.pool.key, not self.rows.is_folded(e.pool.key))
        else:
            self.post_message(self.RowSelected(e.key))

    def action_sideways(self, folded: bool, dx: int) -> None:
        """On a pool header, fold or unfold it; elsewhere scroll sideways by *dx*."""
        e = self.cursor_entry
        if e is not None and e.is_header:
            self.fold(e.pool.key, folded)
        else:
            self.scroll_to(x=self.scroll_x + dx, animate=False)

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.move_cursor(row=self._window().row_at(event.y))
