"""Fill a read-only DataTable with plain text (never Rich markup from the store)."""

from __future__ import annotations

from typing import Iterable, Sequence

from rich.text import Text
from textual.widgets import DataTable

from tui.text.shown import shown


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
