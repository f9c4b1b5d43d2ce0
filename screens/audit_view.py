"""``L``: the latest operator actions from the audit log, newest first (like lazygit's command log).

Each line: when, who (user@host), from where (tui/cli), what, which pool, which rows, and how
their status moved. The log never holds a secret, so nothing here needs masking.
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

from tui.format import NULL
from tui.widgets.plain_table import fill_plain

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


def _short(value: Any) -> str:
    if value is None or value == "" or value == []:
        return NULL
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, list):
        return ", ".join(_short(v) for v in value)
    return str(value)


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


class AuditScreen(ModalScreen[None]):
    """A table of the latest audit entries; Escape, q or L closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="audit.close"),
        Binding("q", "dismiss", "Close", show=False, id="audit.close_q"),
        Binding("L", "dismiss", "Close", show=False, id="audit.close_l"),
    ]

    def __init__(self, path: str, entries: Sequence[dict[str, Any]]) -> None:
        super().__init__(id="audit", classes="modal")
        self.path = path
        self.rows = audit_rows(entries)

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="audit-box"):
            n = len(self.rows)
            title = f"Audit log: {n} latest action{'s' if n != 1 else ''}, newest first · {self.path}"
            yield Static(Text(title), classes="modal-title")
            if not self.rows:
                yield Static("No operator action recorded yet.", classes="modal-hint")
            yield DataTable(id="audit-table", cursor_type="row", zebra_stripes=True)
            yield Static("Esc: close", classes="modal-keys")

    def on_mount(self) -> None:
        fill_plain(self.query_one(DataTable), COLUMNS, self.rows)
