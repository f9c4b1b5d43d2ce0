"""Painting the credential table: one row to one :class:`Strip`, cached by the table.

A mixin of :class:`tui.widgets.credential_table.CredentialTable` (the table owns the rows,
their versions, the layout and the strip cache; this turns one row into one strip and
repaints only the lines of rows that changed).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip

from tui.widgets import cells as C
from tui.widgets.rows import ProfileBanner
from tui.widgets.table_groups import banner_strip
from tui.widgets.table_layout import PAD, cut_fingerprint

COLLAPSED_MARK = "▸"


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


class RowPainting:
    """Row strips, the header strip, ``render_line`` and region repaints (see the module)."""

    def _cell_texts(self, row_key: str) -> list[str]:
        layout = self._widths()
        e = self._entries[row_key]
        if isinstance(e.pool, ProfileBanner):
            return [e.pool.text] + [""] * (len(layout) - 1)
        if e.cred is None:
            mark = COLLAPSED_MARK if e.pool.key in self._folded else C.HEADER_MARK
            specs = [C.ColumnSpec(s.key, s.label, w) for s, w in zip(self.specs, layout, strict=True)]
            return [mark] + C.flow(C.header_tokens(e.pool), [s.width for s in specs[1:]])
        row = self._row(row_key)
        out = []
        for spec, w in zip(self.specs, layout, strict=True):
            text = row.get(spec.key, (C.NULL, ""))[0]
            out.append(cut_fingerprint(text, w) if spec.key == "fingerprint"
                       else C.ellipsize(text, w))
        return out

    def _base_style(self, header: bool, cursor: bool) -> Style:
        # Resolving component styles walks the CSS; once per theme, not once per row.
        key = (header, cursor)
        style = self._base_styles.get(key)
        if style is None:
            style = self.rich_style
            if header:
                style += self.get_component_rich_style("credential-table--pool")
            if cursor:
                style += self.get_component_rich_style("credential-table--cursor")
            self._base_styles[key] = style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._base_styles.clear()
        self._strips.clear()
        self._frames.clear()

    def _render_row(self, row_key: str, cursor: bool) -> Strip:
        """One row as a strip, full width (cropped to the scroll position when painted).

        A credential row is its frame (every cell but the countdown, cached until a
        cell other than the countdown changes) with the countdown cell spliced in: a
        tick costs one short segment per row, and the frame's long segments stay the
        same strings, whose cell lengths Rich has already measured.
        """
        entry = self._entries[row_key]
        base = self._base_style(entry.cred is None, cursor)
        if isinstance(entry.pool, ProfileBanner):
            return banner_strip(entry.pool, base, self._layout, self._full)
        fk = (row_key, self._cells_v.get(row_key, 0), self._layout_id, cursor, self.specs is C.WIDE)
        frame = self._frames.get(fk)
        if frame is None:
            frame = self._frame(row_key, base, cursor, entry.cred is not None)
            self._frames[fk] = frame
        before, at, after, length = frame
        if at < 0:
            return Strip(before, length)
        text, style = self._row(row_key).get("left", (C.NULL, ""))
        w = self._layout[at]
        cell = Segment(" " * PAD + C.ellipsize(text, w).ljust(w) + " " * PAD,
                       base if cursor or not style else base + _style(style))
        return Strip([*before, cell, *after], length)

    def _frame(self, row_key: str, base: Style, cursor: bool,
               splice: bool) -> tuple[list[Segment], int, list[Segment], int]:
        """(segments before the countdown cell, its column index or -1, segments after, length)."""
        texts = self._cell_texts(row_key)
        row = self._data.get(row_key, {})   # built by _cell_texts when it was deferred
        parts: list[list[Segment]] = [[]]
        run: list[str] = []
        at = -1
        pad = " " * PAD
        for i, (spec, w, text) in enumerate(zip(self.specs, self._layout, texts, strict=True)):
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
        used = sum(w + 2 * PAD for w in self._layout)
        run.append(" " * max(0, self._full - used))
        parts[-1].append(Segment("".join(run), base))
        return parts[0], at, parts[-1] if at >= 0 else [], max(self._full, used)

    def _render_header(self) -> Strip:
        style = self.rich_style + self.get_component_rich_style("credential-table--header")
        pad = " " * PAD
        text = "".join(pad + s.label.ljust(w)[:w] + pad for s, w in zip(self.specs, self._layout, strict=True))
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
            if key in self._lazy:
                self._materialize(key)  # shown before a scroll or resize formatted it
            cursor = i == self.cursor_row
            ck = (key, self._versions.get(key, 0), self._layout_id, cursor,
                  self.specs is C.WIDE)
            strip = self._strips.get(ck)
            if strip is None:
                strip = self._render_row(key, cursor)
                self._strips[ck] = strip
        return strip.crop(scroll_x, scroll_x + width)

    def _refresh_rows(self, keys: Sequence[str]) -> None:
        """Repaint just the lines of *keys* that are on screen.

        Whole lines, even for a countdown: Textual repaints a dirty line from the start
        of the widget's strip up to the region's end anyway, and cropping the strip to a
        cell costs more than it saves (headless A/B at 1,000 keys: 3.0-3.2 ms a tick for
        lines vs 3.6-4.5 ms for cells).
        """
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
