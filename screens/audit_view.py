"""``L``: the latest operator actions from the audit log, newest first (like lazygit's command log).

A table that fits 80 columns (time, action, pool, rows) and, below it, the highlighted
entry: who (user@host), from where (tui/cli), and each row's status fields before → after.
``u`` undoes the highlighted action (screens.undo_flow: refused with the reason when a later
operator action changed the same rows, else a confirmation naming what comes back); the
list then shows the undo itself on top. The log never holds a secret, so nothing here
needs masking.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from screens.undo_flow import start_undo
from store.errors import StoreUnreadable
from store.ops import audit
from tui.services.host import host
from tui.services.write_feedback import value_words
from tui.text.format import NULL, ellipsize
from tui.text.paths import tilde
from tui.text.shown import shown, shown_lines
from tui.widgets.plain_table import PlainTable

COLUMNS = ("time", "who", "via", "action", "pool", "rows", "status", "notes")


def _when(value: Any) -> str:
    try:
        return datetime.fromtimestamp(float(value)).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return NULL


def _status(change: dict[str, Any]) -> str:
    before = (change.get("before") or {})
    after = (change.get("after") or {})
    if "value" in before or "value" in after:          # a config.yaml edit
        return f"{_short(before.get('value'))} → {_short(after.get('value'))}"
    if not after:
        return f"{before.get('last_status') or 'ok'} → removed"
    if not before:
        return "added"
    b, a = before.get("last_status") or "ok", after.get("last_status") or "ok"
    if "priority" in before and before.get("priority") != after.get("priority"):
        return f"priority {before.get('priority')} → {after.get('priority')}"
    return f"{b} → {a}"


_short = value_words      # a config value in the operator's words, never the store's fields


def audit_rows(entries: Sequence[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row per entry, newest first."""
    rows = []
    for e in reversed(list(entries)):
        changes = [c for c in e.get("changes") or [] if isinstance(c, dict)]
        names = ", ".join(f"{c.get('label') or NULL}({c.get('id')})" for c in changes) or NULL
        statuses = "; ".join(dict.fromkeys(_status(c) for c in changes)) or NULL
        rows.append((_when(e.get("time")), f"{e.get('user')}@{e.get('host')}", str(e.get("via") or NULL),
                     str(e.get("action") or NULL), str(e.get("pool") or NULL), names, statuses,
                     "; ".join(str(n) for n in e.get("notes") or []) or NULL))
    return rows


# The table's columns and their share of the width: it fits 80 columns, the rest is the detail.
TABLE = ("time", "action", "pool", "rows")
FIXED = {"time": 14, "action": 16, "pool": 14}
MIN_ROWS = 12


def short_time(value: Any) -> str:
    try:
        return datetime.fromtimestamp(float(value)).strftime("%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return NULL


def _cell(text: str, width: int) -> Text:
    # Through the console's funnel before cutting: no part of a key reaches a cell.
    return Text(ellipsize(shown(text), width), no_wrap=True)


def _field(name: str, value: Any) -> str:
    if value is None or value == "":
        return NULL
    if name.endswith("_at") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _when(value / 1000 if value > 1e11 else value)     # seconds or milliseconds
    return _short(value)


def entry_detail(entry: dict[str, Any]) -> list[str]:
    """The lines of the detail pane: who and when, then each row's fields before → after."""
    lines = [f"{_when(entry.get('time'))} · {entry.get('user')}@{entry.get('host')} via "
             f"{entry.get('via') or NULL} · {entry.get('action') or NULL} · {entry.get('pool') or NULL}"]
    for c in entry.get("changes") or []:
        if not isinstance(c, dict):
            continue
        before, after = c.get("before") or {}, c.get("after") or {}
        lines.append(f"{c.get('label') or NULL} ({c.get('id')}): {_status(c)}")
        for name in dict.fromkeys([*before, *after]):
            b, a = before.get(name), after.get(name)
            if b != a or not before or not after:
                lines.append(f"  {name:<22} {_field(name, b)} → {_field(name, a)}")
    lines += [f"note: {n}" for n in entry.get("notes") or []]
    return lines


class AuditScreen(ModalScreen[None]):
    """The latest audit entries (time, action, pool, rows), and the highlighted one's before
    and after in a pane below; Escape, q or L closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="audit.close"),
        Binding("q", "dismiss", "Close", show=False, id="audit.close_q"),
        Binding("L", "dismiss", "Close", show=False, id="audit.close_l"),
        Binding("u", "undo", "Undo", id="audit.undo"),
    ]

    @classmethod
    def open_for(cls, app: Any) -> None:
        """Show *app*'s home's log; one that cannot be read (a FIFO, a directory, a link to
        nothing) is a message naming it, never an error out of the key binding."""
        try:
            entries = audit.tail(app.home, 200)
        except StoreUnreadable as exc:
            app.notify(str(exc), severity="error", timeout=10, markup=False)
            return
        app.push_screen(cls(str(app.home.audit), entries))

    def __init__(self, path: str, entries: Sequence[dict[str, Any]]) -> None:
        super().__init__(id="audit", classes="modal")
        self.path = path
        self._set_entries(entries)
        self._width = 0

    def _set_entries(self, entries: Sequence[dict[str, Any]]) -> None:
        self.entries = list(reversed(list(entries)))          # newest first, as the rows
        self.rows = audit_rows(entries)

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="audit-box"):
            n = len(self.rows)
            title = f"Audit log: {n} latest action{'s' if n != 1 else ''}, newest first · {self.path}"
            yield Static(Text(shown(tilde(title))), classes="modal-title")
            if not self.rows:
                yield Static("No operator action recorded yet.", classes="modal-hint")
            yield PlainTable(id="audit-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="audit-detail")
            yield Static("↑↓: entry · u: undo it · Esc: close", classes="modal-keys")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        table = self.query_one(DataTable)
        width = table.size.width
        if width and width != self._width:
            self._width = width
            self._fill(table, width)

    def _fill(self, table: DataTable, width: int) -> None:
        at = table.cursor_row
        # Each column costs 2 cells of padding; keep 2 for the vertical scrollbar.
        rest = max(MIN_ROWS, width - sum(FIXED.values()) - 2 * len(TABLE) - 2)
        widths = {**FIXED, "rows": rest}
        table.clear(columns=True)
        for c in TABLE:
            table.add_column(c, key=c, width=widths[c])
        for row, entry in zip(self.rows, self.entries, strict=True):
            table.add_row(_cell(short_time(entry.get("time")), widths["time"]),
                          _cell(row[3], widths["action"]), _cell(row[4], widths["pool"]),
                          _cell(row[5], widths["rows"]))
        if self.rows:
            table.move_cursor(row=max(0, min(at, len(self.rows) - 1)), animate=False)
        self.show_detail(table.cursor_row)

    def show_detail(self, index: int) -> None:
        text = "\n".join(entry_detail(self.entries[index])) if 0 <= index < len(self.entries) else ""
        self.query_one("#audit-detail", Static).update(Text(shown_lines(text)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail(event.cursor_row)

    # ------------------------------------------------------------ undo
    def action_undo(self) -> None:
        """Undo the highlighted action, after a confirmation naming what comes back."""
        index = self.query_one(DataTable).cursor_row
        if not 0 <= index < len(self.entries):
            host(self).notify("no action to undo here", severity="warning", timeout=4, markup=False)
            return
        entry = self.entries[index]
        history_id = entry.get("history")
        if not isinstance(history_id, str):
            host(self).notify("this action kept no copy to undo (it is older than the operator history)",
                              severity="warning", timeout=6, markup=False)
            return
        heading = f"{entry.get('action') or NULL} · {entry.get('pool') or NULL} of {short_time(entry.get('time'))}"
        start_undo(host(self), history_id, heading=heading, on_done=self._undone)

    def _undone(self, landed: bool) -> None:
        if not landed or not self.is_attached:
            return
        # The undo is an operator action too: it shows on top, highlighted (u again redoes).
        self._set_entries(audit.tail(host(self).home, 200))
        table = self.query_one(DataTable)
        table.move_cursor(row=0, animate=False)
        self._fill(table, self._width or table.size.width)
