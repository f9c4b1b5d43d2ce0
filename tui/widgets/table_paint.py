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

from . import cells as C
from .rows import ProfileBanner
from .table_groups import banner_strip
from .table_layout import PAD, cut_fingerprint

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
        row = self._data[row_key]
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

    def _render_row(self, row_key: str, cursor: bool) -> Strip:
        """One row as a strip, full width (cropped to the scroll position when painted)."""
        entry = self._entries[row_key]
        base = self._base_style(entry.cred is None, cursor)
        if isinstance(entry.pool, ProfileBanner):
            return banner_strip(entry.pool, base, self._layout, self._full)
        texts = self._cell_texts(row_key)
        row = self._data.get(row_key, {})
        segs: list[Segment] = []
        run: list[str] = []
        pad = " " * PAD
        for spec, w, text in zip(self.specs, self._layout, texts, strict=True):
            cell_style = "" if cursor else row.get(spec.key, ("", ""))[1]
            cell = pad + text.ljust(w) + pad
            if not cell_style:
                run.append(cell)
                continue
            if run:
                segs.append(Segment("".join(run), base))
                run = []
            segs.append(Segment(cell, base + _style(cell_style)))
        # Padded here, in the row's own style, so a cursor bar spans the whole width.
        used = sum(w + 2 * PAD for w in self._layout)
        run.append(" " * max(0, self._full - used))
        segs.append(Segment("".join(run), base))
        return Strip(segs, max(self._full, used))

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
