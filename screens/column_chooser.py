"""``W``: which columns the credential table shows, chosen with the keyboard alone.

Every column but ``#`` is listed with a box (``[x]``): ↑/↓ move, space ticks or unticks, Enter shows
the ticked ones (always in the table's one order), ``a`` goes back to the automatic layout
(as many columns as the terminal has room for), Esc leaves the table as it was. The choice
is kept between sessions (screens.view_memory); ``w`` still switches to every column and back.
"""

from __future__ import annotations

from typing import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tui.widgets.table_columns import AUTO, ORDER, TITLES, WIDE_MODE

# What each column shows, as the chooser lists it.
ABOUT: dict[str, str] = {
    "label": "the row's label",
    "auth": "api_key or oauth",
    "source": "where the key came from: manual, env:VAR, claude_code…",
    "status": "ok, cooling, ready or dead",
    "left": "time left of a cooldown",
    "headroom": "the tightest rate-limit window a provider reported",
    "spend": "today's cost (UTC day): $, ~estimate, incl. for a subscription",
    "resets": "when the cooldown ends, local time",
    "error": "the code and the reason in one column",
    "code": "the provider's status code",
    "reason": "the reason Hermes recorded (last_error_reason)",
    "requests": "requests the agents counted",
    "priority": "the order Hermes tries the keys in",
    "id": "the row's id",
    "message": "the provider's message",
    "fingerprint": "the key as a fingerprint (prefix…last 4), never the key",
}
LAYOUTS = {AUTO: "automatic: as many as the terminal has room for",
           WIDE_MODE: "wide: every column (w)"}

Chosen = "tuple[str, ...] | str | None"   # the columns; AUTO; None: cancelled


class ColumnChooser(ModalScreen[Chosen]):
    """Dismisses with the ticked columns' keys, with ``"auto"``, or None (Esc).

    The boxes are text (``[x]``, ``[ ]``), not a colour: they read the same in 16 colours
    and under NO_COLOR."""

    DEFAULT_CSS = """
    #columns-list { height: auto; max-height: 16; margin-top: 1; }
    """
    BINDINGS = [
        Binding("space", "toggle", "Tick / untick the column", id="columns.toggle"),
        Binding("enter", "apply", "Show the ticked columns", priority=True, id="columns.apply"),
        Binding("a", "automatic", "Automatic columns", id="columns.auto"),
        Binding("escape", "cancel", "Cancel", id="columns.cancel"),
    ]

    def __init__(self, shown: Sequence[str], mode: str) -> None:
        super().__init__(id="columns", classes="modal")
        self.keys = [k for k in ORDER if k in ABOUT]
        self.ticks = {k: k in shown for k in self.keys}
        self.mode = mode

    def line(self, key: str) -> Table:
        """The column's line: its box and title, then what it shows; on a narrow screen the
        words wrap under themselves, never back under the box."""
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(no_wrap=True, width=3)
        grid.add_column(no_wrap=True, width=12)
        grid.add_column(ratio=1)
        grid.add_row(Text("[x]" if self.ticks[key] else "[ ]"), Text(TITLES[key]), Text(ABOUT[key]))
        return grid

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="columns-box"):
            yield Static(Text("Columns of the credential table"), classes="modal-title")
            now = LAYOUTS.get(self.mode, "your own choice")
            yield Static(Text(f"now: {now}"), classes="modal-hint")
            yield OptionList(*(Option(self.line(k), id=k) for k in self.keys), id="columns-list",
                             compact=True)
            yield Static("", id="columns-error", classes="form-error")
            yield Static(Text("space: tick / untick   ·   Enter: show the ticked   ·   "
                              "a: automatic   ·   Esc: cancel"), classes="modal-keys")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @property
    def ticked(self) -> tuple[str, ...]:
        return tuple(k for k in self.keys if self.ticks[k])

    def action_toggle(self) -> None:
        options = self.query_one(OptionList)
        at = options.highlighted
        if at is None:
            return
        key = self.keys[at]
        self.ticks[key] = not self.ticks[key]
        options.replace_option_prompt_at_index(at, self.line(key))

    def action_apply(self) -> None:
        ticked = self.ticked
        if not ticked:
            error = self.query_one("#columns-error", Static)
            error.update(Text("tick at least one column (or a: automatic)"))
            error.add_class("-shown")
            return
        self.dismiss(ticked)

    def action_automatic(self) -> None:
        self.dismiss(AUTO)

    def action_cancel(self) -> None:
        self.dismiss(None)
