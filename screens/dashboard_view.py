"""How the dashboard's table reads, as the operator changes it (nothing here writes): the
filter and stepping through its matches (``n``/``N``), the sort and its direction, the
columns (``w`` and the column chooser) and a range mark.

The dashboard owns one :class:`ViewControls`, which sees it only through :class:`Viewer`;
the dashboard's ``action_*`` methods (which the bindings, the footer, ``?`` help and the
palette see) each call one method here.
"""

from __future__ import annotations

from typing import Protocol

from textual.binding import Binding
from textual.widgets import Input

from screens import screen
from screens.dashboard_changes import count
from screens.view_memory import ViewMemory
from tui.services.host import HasApp, Host, host
from tui.widgets import CredentialTable
from tui.widgets.rows import REVERSED, SORT_ORDER, SORTS, sort_arrow
from tui.widgets.table_columns import AUTO

# The dashboard's keys for these (its BINDINGS take them in).
VIEW_BINDINGS = [
    Binding("o", "sort", "Sort", show=False, id="dashboard.sort",
            tooltip="Sort: next order — priority, status, time left, label, requests"),
    Binding("O", "reverse_sort", "Reverse sort", show=False, id="dashboard.reverse_sort",
            tooltip="Sort: reverse — turn the order round, ascending / descending"),
    Binding("n", "next_match", "Next match", show=False, id="dashboard.next_match",
            tooltip="Next match — the filter's next credential row (wraps, and says so)"),
    Binding("N", "previous_match", "Previous match", show=False, id="dashboard.previous_match",
            tooltip="Previous match — the filter's previous credential row (wraps, and says so)"),
    Binding("w", "wide", "Wide", show=False, id="dashboard.wide",
            tooltip="Toggle wide columns — every column: auth, source, resets at, message, ids..."),
    Binding("W", "columns", "Columns", show=False, id="dashboard.columns",
            tooltip="Choose columns — which columns the table shows (kept between sessions)"),
    Binding("m", "mark_range", "Mark range", show=False, id="dashboard.mark_range",
            tooltip="Mark a range — from this row to wherever the cursor goes; space tags it, "
                    "r / c act on it"),
]


class Viewer(HasApp, Protocol):
    """What the view controls need of the dashboard."""

    sort: str
    filter_text: str

    @property
    def table(self) -> CredentialTable: ...

    @property
    def filter_box(self) -> Input: ...

    @property
    def memory(self) -> ViewMemory: ...

    def refresh_table(self) -> None:
        """Show the pools again under the current filter and sort."""

    def refresh_bindings(self) -> None: ...


class ViewControls:
    """Filter, match stepping, sort, columns and range mark for one dashboard."""

    def __init__(self, viewer: Viewer) -> None:
        self.viewer = viewer

    @property
    def host(self) -> Host:
        return host(self.viewer)

    def say(self, text: str, timeout: float = 3) -> None:
        self.host.notify(text, timeout=timeout, markup=False)

    # ------------------------------------------------------------ filter
    def open_filter(self) -> None:
        """``/``: the filter box, holding the filter as it is."""
        box = self.viewer.filter_box
        box.add_class("-shown")
        box.value = self.viewer.filter_text
        box.focus()
        self.viewer.refresh_bindings()

    def filter_changed(self, value: str) -> None:
        self.viewer.filter_text = value.strip()
        self.viewer.refresh_table()

    def filter_done(self) -> None:
        """Enter in the box: back to the table, on the first match."""
        v = self.viewer
        v.filter_box.remove_class("-shown")
        table = v.table
        table.focus()
        first = next((i for i, k in enumerate(table.order) if not table.entry(k).is_header), None)
        if first is not None:
            table.move_cursor(row=first, animate=False)
        v.refresh_bindings()

    def clear_filter(self) -> None:
        """Esc: clear the filter and hide the box."""
        v = self.viewer
        box = v.filter_box
        box.remove_class("-shown")
        box.value = ""
        v.filter_text = ""
        v.refresh_table()
        v.table.focus()
        v.refresh_bindings()

    # ------------------------------------------------------------ sort
    @property
    def sort_text(self) -> str:
        """``priority ↑``: the order and its direction, for the status bar."""
        return f"{self.viewer.sort} {sort_arrow(self.viewer.sort, self.viewer.table.reverse)}"

    def sort_words(self) -> str:
        v = self.viewer
        return REVERSED[v.sort] if v.table.reverse else SORTS[v.sort]

    def next_sort(self) -> None:
        """``o``: the next order, in the direction chosen."""
        v = self.viewer
        v.sort = SORT_ORDER[(SORT_ORDER.index(v.sort) + 1) % len(SORT_ORDER)]
        v.refresh_table()
        v.memory.remember()
        self.say(f"Sort: {self.sort_words()}", timeout=2)

    def reverse_sort(self) -> None:
        """``O``: turn the order round (ascending / descending)."""
        table = self.viewer.table
        table.reverse = not table.reverse
        self.viewer.refresh_table()
        self.viewer.memory.remember()
        self.say(f"Sort: {self.sort_words()} ({self.sort_text})", timeout=2)

    # ------------------------------------------------------------ columns
    def toggle_wide(self) -> None:
        table = self.viewer.table
        table.set_wide(not table.wide)
        self.viewer.memory.remember()

    def choose_columns(self) -> None:
        """``W``: the column chooser, the columns on screen ticked."""
        layout = self.viewer.table.column_layout
        shown = [k for k in layout.keys if k != "pos"]

        def chosen(keys: tuple[str, ...] | str | None) -> None:
            if keys is None:
                return
            table = self.viewer.table
            table.set_columns(None if keys == AUTO else list(keys))
            self.viewer.memory.remember()
            self.say("Columns: as many as fit" if keys == AUTO
                     else f"Columns: {', '.join(c.label for c in table.columns)}", timeout=2)

        self.host.push_screen(screen("columns")(shown, layout.mode), chosen)

    # ------------------------------------------------------------ range mark
    def mark_range(self) -> None:
        """``m``: start a range mark at the cursor's row, or end one without tagging it."""
        table = self.viewer.table
        if table.range_active:
            table.mark_range(False)
            self.say("range mark ended, nothing tagged", timeout=2)
            return
        table.mark_range(True)
        self.say("range mark: move the cursor, then space tags the range, r or c act on it; "
                 "m or esc ends it", timeout=4)

    def end_range(self) -> None:
        """Esc during a range mark: end it, tagging nothing."""
        self.viewer.table.mark_range(False)

    # ------------------------------------------------------------ n / N
    def step(self, step: int) -> None:
        """``n`` (+1) / ``N`` (-1): the next or previous credential row the filter matches,
        in folded pools too (unfolded to show it), wrapping at either end and saying so."""
        v = self.viewer
        table = v.table
        if not v.filter_text:
            self.say("n / N step through the filter's matches: filter with / first")
            return
        keys = table.rows.every_key()
        at = {k: i for i, k in enumerate(keys)}
        matches = [k for k in keys if (e := table.entry(k)) is not None and e.cred is not None]
        if not matches:
            self.say(f"no credential matches “{v.filter_text}”")
            return
        here = at.get(table.cursor_key or "", -1)
        ahead = [k for k in matches if at[k] > here] if step > 0 else \
            [k for k in reversed(matches) if at[k] < here]
        target = ahead[0] if ahead else (matches[0] if step > 0 else matches[-1])
        entry = table.entry(target)
        if entry is not None and table.rows.is_folded(entry.pool.key):
            table.fold(entry.pool.key, False)
        table.move_to_key(target)
        text = f"match {matches.index(target) + 1} of {count(len(matches), 'row')} for “{v.filter_text}”"
        if not ahead:
            text = ("past the last match, back to the first: " if step > 0
                    else "past the first match, back to the last: ") + text
        self.say(text)
