"""`?`: every key binding, generated from the bindings themselves (never hand-written).

Typing filters the list live (every word must match the scope, key, description or id);
↓ moves into the table. Textual's own inherited bindings (focus next, copy: no id) are
left out as noise: every binding of ours has an id.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static


def binding_rows(app: App, scopes: Iterable[tuple[str, type]],
                 keymap: Mapping[str, str] | None = None) -> list[tuple[str, str, str, str]]:
    """(where, key, description, id) for each binding of each scope class, *keymap* applied
    (the operator's, binding id -> keys, as the app set it); keys shown as *app* shows them."""
    keymap = dict(keymap or {})
    rows: list[tuple[str, str, str, str]] = []
    for where, cls in scopes:
        bindings = BindingsMap(class_bindings(cls))
        if keymap:
            bindings.apply_keymap(keymap)
        # Keyed by (key, action): a subclass's binding (with its id) replaces the base's.
        mine: dict[tuple[str, str], tuple[str, str, str, str]] = {}
        for _key, b in bindings:
            if b.system or not b.description or not b.id:
                continue  # no id: one of Textual's inherited bindings, repeated on every screen
            key = app.get_key_display(b)
            mine[(key, b.action)] = (where, key, b.description, b.id or "—")
        rows.extend(mine.values())
    return rows


def class_bindings(cls: type) -> list[Binding]:
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
        Binding("down", "to_table", "To the list", show=False, id="help.to_table"),
    ]

    def __init__(self, rows: list[tuple[str, str, str, str]], *, query: str = "") -> None:
        super().__init__(id="help")
        self.rows = rows
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(id="help-title")
            yield Input(placeholder="type to filter: a key, a word, a screen…", id="help-filter")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("where", key="where")
        table.add_column("key", key="key")
        table.add_column("does", key="does")
        table.add_column("id", key="id")
        box = self.query_one(Input)
        box.value = self.query_text
        self.show_rows(self.query_text)
        box.focus()                      # typing filters at once, as in htop's search

    def show_rows(self, query: str) -> None:
        shown = matching(self.rows, query)
        table = self.query_one(DataTable)
        table.clear()
        for row in shown:
            table.add_row(*(Text(c) for c in row))
        what = f"{len(shown)} of {len(self.rows)} keys" if query.strip() else f"{len(self.rows)} keys"
        self.query_one("#help-title", Static).update(
            Text(f"Keys: {what}  (type to filter · ↓ to the list · Esc closes · ctrl+p: commands)"))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.show_rows(event.value)

    def action_to_table(self) -> None:
        self.query_one(DataTable).focus()


def matching(rows: list[tuple[str, str, str, str]], query: str) -> list[tuple[str, str, str, str]]:
    """The rows where every word of *query* appears (any case) in one of the row's cells."""
    words = query.lower().split()
    return [r for r in rows if all(any(w in c.lower() for c in r) for w in words)]
