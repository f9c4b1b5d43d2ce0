"""Painting the credential table: one row to one :class:`Strip`, cached by row version.

:class:`RowPainter` owns the table's strip cache (an LRU keyed by row key, row version,
layout version and cursor, the way Textual's own ``Log`` stays fast) and a cache of each
row's *frame* (every cell but the countdown), so a tick splices one short segment into a
line whose other segments Rich has already measured. It reads the rows, their cells and
the layout through their public methods, and the widget's styles through one callable;
the widget decides which lines to repaint.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.strip import Strip

from tui.text.headroom import fit as fit_headroom
from tui.widgets import cells as C
from tui.widgets.rows import ProfileBanner
from tui.widgets.table_cells import CellStore
from tui.widgets.table_columns import PAD, title
from tui.widgets.table_headers import Run, banner_text, pool_header, runs_line, runs_to_cells
from tui.widgets.table_layout import ColumnLayout, cut_fingerprint
from tui.widgets.table_rows import RowStore
from tui.widgets.table_spend import fit as fit_spend

COLLAPSED_MARK = "▸"
HEADER = "credential-table--header"
POOL = "credential-table--pool"
CURSOR = "credential-table--cursor"

Frame = tuple[list[Segment], int, list[Segment], int]
StyleOf = Callable[[str | None], Style]   # component class -> style; None: the widget's own


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


def banner_strip(banner: ProfileBanner, base: Style, layout: tuple[int, ...], full: int) -> Strip:
    """A profile's header line in the all-profiles view: its primary, fallback chain and
    health counts as one text across every column (they do not fit a row's cells)."""
    width = max(full, sum(w + 2 * PAD for w in layout))
    text = (" " * PAD + banner_text(banner.tokens, width - PAD)).ljust(width)
    return Strip([Segment(text, base)], width)


class RowPainter:
    """Row strips and frames (cached), the header strip, and each row's texts as painted.

    :attr:`strips` and :attr:`frames` are public so tests can show what losing them costs.
    Every row painted must be formatted (the table formats a deferred row first).
    """

    def __init__(self, rows: RowStore, cells: CellStore, layout: ColumnLayout,
                 style_of: StyleOf) -> None:
        self._rows = rows
        self._cells = cells
        self._layout = layout
        self._style_of = style_of
        self.strips: LRUCache[tuple, Strip] = LRUCache(2048)
        # Per row, all but the countdown cell; keyed by the frame version, which a tick
        # leaves alone.
        self.frames: LRUCache[tuple, Frame] = LRUCache(2048)
        self._base_styles: dict[tuple[bool, bool], Style] = {}

    def clear(self) -> None:
        """Forget every cached line (the rows are gone)."""
        self.strips.clear()
        self.frames.clear()

    def restyle(self) -> None:
        """The theme or CSS changed: every style and line is worked out again."""
        self._base_styles.clear()
        self.clear()

    def texts(self, key: str) -> list[str]:
        """The row's cell texts, each cut to its column's current width."""
        layout = self._layout.widths
        specs = self._layout.specs
        e = self._rows.entry(key)
        assert e is not None, key
        if isinstance(e.pool, ProfileBanner):
            text = banner_text(e.pool.tokens, max(self._layout.full, self._layout.used) - PAD)
            return [text] + [""] * (len(layout) - 1)
        if e.cred is None:
            return [self.fold_mark(e.pool.key)] + runs_to_cells(self.header_runs(key))
        row = self._cells.row(key)
        out = []
        for spec, w in zip(specs, layout, strict=True):
            text = row.get(spec.key, (C.NULL, ""))[0]
            out.append(cut_fingerprint(text, w) if spec.key == "fingerprint"
                       else fit_headroom(text, w) if spec.key == "headroom"
                       else fit_spend(text, w) if spec.key == "spend" else C.ellipsize(text, w))
        return out

    def fold_mark(self, pool: str) -> str:
        return COLLAPSED_MARK if self._rows.is_folded(pool) else C.HEADER_MARK

    def header_runs(self, key: str) -> list[Run]:
        """A pool header's words over the cells after ``#``: the name shortened first, the
        counts kept whole (tui.widgets.table_headers)."""
        e = self._rows.entry(key)
        assert e is not None and e.cred is None, key
        name, *rest = C.header_tokens(e.pool)
        return pool_header(name, rest, self._layout.widths[1:], C.usable_again(e.pool))

    def header_strip(self, key: str, base: Style) -> Strip:
        """A pool header's line: the fold mark, then its runs, full width."""
        e = self._rows.entry(key)
        assert e is not None, key
        layout = self._layout
        pad = " " * PAD
        text = (pad + self.fold_mark(e.pool.key).ljust(layout.widths[0]) + pad
                + runs_line(self.header_runs(key), layout.widths[1:]))
        length = max(layout.full, layout.used)
        return Strip([Segment(text.ljust(length), base)], length)

    def line(self, key: str, cursor: bool) -> Strip:
        """The row's strip, full width, from the cache while its version holds."""
        ck = (key, self._cells.version(key), self._layout.version, cursor)
        strip = self.strips.get(ck)
        if strip is None:
            strip = self.render_row(key, cursor)
            self.strips[ck] = strip
        return strip

    def header(self) -> Strip:
        """The column titles' line."""
        style = self._style_of(None) + self._style_of(HEADER)
        pad = " " * PAD
        layout = self._layout
        text = "".join(pad + title(s, w).ljust(w) + pad
                       for s, w in zip(layout.specs, layout.widths, strict=True))
        return Strip([Segment(text, style)]).extend_cell_length(layout.full, style)

    def _base_style(self, header: bool, cursor: bool) -> Style:
        # Resolving component styles walks the CSS; once per theme, not once per row.
        key = (header, cursor)
        style = self._base_styles.get(key)
        if style is None:
            style = self._style_of(None)
            if header:
                style += self._style_of(POOL)
            if cursor:
                style += self._style_of(CURSOR)
            self._base_styles[key] = style
        return style

    def render_row(self, key: str, cursor: bool) -> Strip:
        """One row as a strip, full width (cropped to the scroll position when painted).

        A credential row is its frame (every cell but the countdown, cached until a
        cell other than the countdown changes) with the countdown cell spliced in: a
        tick costs one short segment per row, and the frame's long segments stay the
        same strings, whose cell lengths Rich has already measured.
        """
        entry = self._rows.entry(key)
        assert entry is not None, key
        base = self._base_style(entry.cred is None, cursor)
        layout = self._layout
        if isinstance(entry.pool, ProfileBanner):
            return banner_strip(entry.pool, base, layout.widths, layout.full)
        if entry.cred is None:
            return self.header_strip(key, base)
        fk = (key, self._cells.frame_version(key), layout.version, cursor)
        frame = self.frames.get(fk)
        if frame is None:
            frame = self.frame(key, base, cursor, True)
            self.frames[fk] = frame
        before, at, after, length = frame
        if at < 0:
            return Strip(before, length)
        text, style = self._cells.row(key).get("left", (C.NULL, ""))
        w = layout.widths[at]
        cell = Segment(" " * PAD + C.ellipsize(text, w).ljust(w) + " " * PAD,
                       base if cursor or not style else base + _style(style))
        return Strip([*before, cell, *after], length)

    def frame(self, key: str, base: Style, cursor: bool, splice: bool) -> Frame:
        """(segments before the countdown cell, its column index or -1, segments after, length)."""
        texts = self.texts(key)
        row = self._cells.row(key)
        layout = self._layout
        parts: list[list[Segment]] = [[]]
        run: list[str] = []
        at = -1
        pad = " " * PAD
        for i, (spec, w, text) in enumerate(zip(layout.specs, layout.widths, texts, strict=True)):
            if splice and spec.key == "left":
                if run:
                    parts[-1].append(Segment("".join(run), base))
                    run = []
                at = i
                parts.append([])
                continue
            cell_style = "" if cursor else row.get(spec.key, ("", ""))[1]
            cell = pad + text.ljust(w) + pad
            if not cell_style:
                run.append(cell)
                continue
            if run:
                parts[-1].append(Segment("".join(run), base))
                run = []
            parts[-1].append(Segment(cell, base + _style(cell_style)))
        # Padded here, in the row's own style, so a cursor bar spans the whole width.
        used = layout.used
        run.append(" " * max(0, layout.full - used))
        parts[-1].append(Segment("".join(run), base))
        return parts[0], at, parts[-1] if at >= 0 else [], max(layout.full, used)
