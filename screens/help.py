"""`?`: every key binding, generated from the bindings themselves (never hand-written).

Typing filters the list live (every word must match the scope, key, description or id);
↓ moves into the table. Textual's own inherited bindings (focus next, copy: no id) are
left out as noise: every binding of ours has an id. At 80 columns the ``where`` column
goes (the id starts with the screen's name) and the description gives way: the binding
id, which a keymap file needs, is never cut.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from tui.text.format import ellipsize
from tui.widgets.plain_table import FittedTable


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

    @classmethod
    def of(cls, app: App, scopes: Iterable[tuple[str, type]], keymap: Mapping[str, str] | None = None,
           *, query: str = "") -> HelpScreen:
        """Help over every binding of *scopes* as *app* shows them (:func:`binding_rows`)."""
        return cls(binding_rows(app, scopes, keymap), query=query)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(id="help-title")
            yield Input(placeholder="type to filter: a key, a word, a screen…", id="help-filter")
            yield FittedTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.value = self.query_text
        self.show_rows(self.query_text)
        box.focus()                      # typing filters at once, as in htop's search

    def on_fitted_table_width_changed(self, event: FittedTable.WidthChanged) -> None:
        self.show_rows(self.query_one(Input).value)     # the columns fit the table's width

    def show_rows(self, query: str) -> None:
        shown = matching(self.rows, query)
        table = self.query_one(FittedTable)
        table.fitted = table.size.width
        widths = column_widths(self.rows, table.size.width - SCROLLBAR)
        if list(table.columns) != list(widths) or [c.width for c in table.columns.values()] != list(widths.values()):
            table.clear(columns=True)
            for name, width in widths.items():
                table.add_column(name, key=name, width=width)
        else:
            table.clear()
        at = {name: COLUMNS.index(name) for name in widths}
        for row in shown:
            cells = narrow_row(row) if "where" not in widths else row
            table.add_row(*(Text(ellipsize(cells[at[c]], w), no_wrap=True) for c, w in widths.items()))
        what = f"{len(shown)} of {len(self.rows)} keys" if query.strip() else f"{len(self.rows)} keys"
        self.query_one("#help-title", Static).update(Text(title(what, table.size.width)))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.show_rows(event.value)

    def action_to_table(self) -> None:
        self.query_one(DataTable).focus()


COLUMNS = ("where", "key", "does", "id")
NARROW = ("key", "does", "id")       # below the full width: the id names the screen too
PADDING = 2                          # a DataTable column's cell padding, both sides
SCROLLBAR = 2
MIN_DOES = 8


def column_widths(rows: list[tuple[str, str, str, str]], width: int) -> dict[str, int]:
    """Each shown column's width within *width* cells: every column whole when it fits, else
    without ``where``; the binding id (what a keymap needs) and the key are never cut, the
    description takes what is left."""
    need = {c: max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(COLUMNS)}
    for cols in (COLUMNS, NARROW):
        total = sum(need[c] + PADDING for c in cols)
        if total <= width:
            out = {c: need[c] for c in cols}
            out["does"] += width - total              # the room left goes to the words
            return out
    fixed = need["key"] + need["id"] + PADDING * len(NARROW)
    return {"key": need["key"], "does": max(MIN_DOES, width - fixed), "id": need["id"]}


TITLE = "Keys: {what}  (type to filter · ↓ to the list · Esc closes · ctrl+p: commands)"
SHORT_TITLE = "Keys: {what}  (type to filter · ↓ list · Esc: close)"


def title(what: str, width: int) -> str:
    """The title line, whole when it fits *width*, else its short form (never cut mid-word)."""
    full = TITLE.format(what=what)
    return full if len(full) <= width or width <= 0 else SHORT_TITLE.format(what=what)


def narrow_row(row: tuple[str, str, str, str]) -> tuple[str, str, str, str]:
    """Without the ``where`` column, a binding that acts on another screen than its id says
    names that screen in its words: ``r  Reset (on profiles)  dashboard.reset``, so no two
    lines read the same."""
    where, key, does, bid = row
    if bid.partition(".")[0] == where.replace(" ", "_") or not where:
        return row
    return (where, key, f"{does} (on {where})", bid)


def matching(rows: list[tuple[str, str, str, str]], query: str) -> list[tuple[str, str, str, str]]:
    """The rows where every word of *query* appears (any case) in one of the row's cells."""
    words = query.lower().split()
    return [r for r in rows if all(any(w in c.lower() for c in r) for w in words)]
