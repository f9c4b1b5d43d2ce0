"""`?`: every key binding, generated from the bindings themselves (never hand-written)."""

from __future__ import annotations

from typing import Iterable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static


def binding_rows(app: App, scopes: Iterable[tuple[str, type]]) -> list[tuple[str, str, str, str]]:
    """(where, key, description, id) for each binding of each scope class, keymap applied."""
    keymap = dict(getattr(app, "_keymap", {}) or {})
    rows: list[tuple[str, str, str, str]] = []
    for where, cls in scopes:
        bindings = BindingsMap(_own_bindings(cls))
        if keymap:
            bindings.apply_keymap(keymap)
        # Keyed by (key, action): a subclass's binding (with its id) replaces the base's.
        mine: dict[tuple[str, str], tuple[str, str, str, str]] = {}
        for _key, b in bindings:
            if b.system or not b.description:
                continue
            key = app.get_key_display(b)
            mine[(key, b.action)] = (where, key, b.description, b.id or "—")
        rows.extend(mine.values())
    return rows


def _own_bindings(cls: type) -> list[Binding]:
    """A class's bindings including inherited ones (what a live instance would have)."""
    out: list[Binding] = []
    for base in reversed(cls.__mro__):
        if "BINDINGS" not in base.__dict__:
            continue
        if not base.__dict__.get("_inherit_bindings", True):
            out = []  # this class starts its bindings afresh
        out.extend(Binding.make_bindings(base.__dict__["BINDINGS"] or []))
    return out


class HelpScreen(ModalScreen[None]):
    """A modal table of keys; Escape, q or ? closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close help", id="help.close"),
        Binding("q", "dismiss", "Close help", show=False, id="help.close_q"),
        Binding("question_mark", "dismiss", "Close help", show=False, id="help.close_help"),
    ]

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__(id="help")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static("Keys  (Esc closes; ctrl+p opens the command palette)", id="help-title")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("where", key="where")
        table.add_column("key", key="key")
        table.add_column("does", key="does")
        table.add_column("id", key="id")
        for row in self.rows:
            table.add_row(*(Text(c) for c in row))
        table.focus()
