"""Profile header lines of the all-profiles view: one line across every column.

A profile's primary, its fallback chain and its health counts do not fit the cells of
a credential row, so a :class:`tui.widgets.rows.ProfileBanner` is painted as one text.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from tui.widgets import cells as C
from tui.widgets.rows import ProfileBanner
from tui.widgets.table_layout import PAD


def banner_strip(banner: ProfileBanner, base: Style, layout: tuple[int, ...], full: int) -> Strip:
    """The banner's line, full width, in the header style (with the cursor's if on it)."""
    width = max(full, sum(w + 2 * PAD for w in layout))
    text = C.ellipsize(" " * PAD + banner.text, width).ljust(width)
    return Strip([Segment(text, base)], width)
