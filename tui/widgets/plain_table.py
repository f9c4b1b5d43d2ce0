"""Fill a read-only DataTable with plain text (never Rich markup from the store).

:func:`fill_fitted` fits the table to its width instead of scrolling sideways: each column
as wide as its widest cell (or its cap), and one column, the one that says the most (a
finding, a probe's result), takes what is left and wraps onto more lines. At 80 columns
nothing that matters (a fingerprint, an id, the end of a sentence) is cut off.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import DataTable

from tui.text.shown import shown
from tui.widgets.table_cursor import FIRST_LAST

PADDING = 2          # a DataTable column's cell padding, both sides
SCROLLBAR = 2
MIN_FLEX = 16
MIN_WRAP = 6         # no column wraps narrower than this (or its header)


class PlainTable(DataTable):
    """A DataTable whose Home and End go to the first and last row, as the dashboard's do
    (Textual's own scroll sideways, which a row cursor cannot see)."""

    BINDINGS = FIRST_LAST

    def action_move(self, where: str) -> None:
        if where == "first":
            self.action_scroll_top()
        elif where == "last":
            self.action_scroll_bottom()


class FittedTable(PlainTable):
    """A read-only DataTable whose columns its screen fits to its width: it posts
    :class:`FittedTable.WidthChanged` when its width changes (the first layout included),
    and ``fitted`` is the width its columns were last fitted to (tests wait on it)."""

    class WidthChanged(Message):
        def __init__(self, table: FittedTable, width: int) -> None:
            super().__init__()
            self.table = table
            self.width = width

        @property
        def control(self) -> FittedTable:
            return self.table

    fitted = -1

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self.fitted:
            self.post_message(self.WidthChanged(self, event.size.width))


def fill_plain(table: DataTable, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Add *columns* and *rows* as no-wrap Text, then focus the table.

    Labels and reasons come from auth.json and the audit log; as plain strings DataTable
    would read them as markup (a label like ``[/]`` could break the screen).
    """
    for c in columns:
        table.add_column(c, key=c)
    for row in rows:
        table.add_row(*(Text(shown(c), no_wrap=True) for c in row))
    table.focus()


def fitted_widths(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int, flexible: str,
                  caps: Mapping[str, int] | None = None) -> dict[str, int]:
    """Each column's width within *width* cells: its widest cell (at most its cap); *flexible*
    takes the rest (at least MIN_FLEX, at most what its widest cell needs); if that is still
    too wide, the widest columns give a cell at a time (their cells wrap)."""
    caps = caps or {}
    need = {c: max([cell_len(c), *(cell_len(shown(r[i])) for r in rows)]) for i, c in enumerate(columns)}
    out = {c: min(need[c], caps.get(c, need[c])) for c in columns}
    fixed = sum(out[c] + PADDING for c in columns if c != flexible) + PADDING
    out[flexible] = max(MIN_FLEX, min(need[flexible], width - SCROLLBAR - fixed))
    # Still too wide: the widest columns wrap too, a cell at a time, down to their header.
    total = sum(out[c] + PADDING for c in columns) + SCROLLBAR
    floor = {c: min(need[c], max(cell_len(c), MIN_WRAP)) for c in columns}
    while total > width:
        wide = [c for c in columns if out[c] > floor[c]]
        if not wide:
            break
        out[max(wide, key=lambda c: out[c])] -= 1
        total -= 1
    return out


def fill_fitted(table: FittedTable, columns: Sequence[str], rows: Sequence[Sequence[str]], flexible: str,
                caps: Mapping[str, int] | None = None) -> None:
    """Show *rows* fitted to the table's width (:func:`fitted_widths`): cells wrap, rows grow.

    Call again on its :class:`FittedTable.WidthChanged`; the cursor keeps its row."""
    at = table.cursor_row
    table.fitted = table.size.width
    widths = fitted_widths(columns, rows, table.size.width or 80, flexible, caps)
    table.clear(columns=True)
    for c in columns:
        table.add_column(c, key=c, width=widths[c])
    for row in rows:
        cells = [Text(shown(c), overflow="fold") for c in row]
        table.add_row(*cells, height=None)
    if rows:
        table.move_cursor(row=max(0, min(at, len(rows) - 1)), animate=False)
