"""``M``: the message log, the last 100 messages newest first, each with all its lines.

What the flash line said in one line, in full: a write's rows before → after, its notes and
the way back, a failure's whole reason. Real line breaks, never escaped ones; the text was
passed through the console's funnel when it was logged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.widgets.flash import Logged


def entry_text(entry: Logged) -> Text:
    """``12:00:05 ✔ reset · openrouter: done`` then the details, indented."""
    when = datetime.fromtimestamp(entry.at).strftime("%H:%M:%S")
    t = Text(no_wrap=False)
    t.append(f"{when} {entry.symbol} ", style="bold")
    head = entry.title or entry.lines[0]
    t.append(head, style="bold")
    body = [ln for ln in entry.lines if ln] if entry.title else [ln for ln in entry.lines[1:] if ln]
    for line in body:
        t.append("\n    " + line)
    if entry.sticky:
        t.append("\n    (a failed write: stays on the flash line until dismissed)", style="dim")
    return t


class MessagesScreen(ModalScreen[None]):
    """The log, newest first; Escape, q or M closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="messages.close"),
        Binding("q", "dismiss", "Close", show=False, id="messages.close_q"),
        Binding("M", "dismiss", "Close", show=False, id="messages.close_m"),
    ]

    def __init__(self, entries: Sequence[Logged], dismiss_key: str = "ctrl+l") -> None:
        super().__init__(id="messages", classes="modal")
        self.entries = list(reversed(list(entries)))
        self.dismiss_key = dismiss_key

    @property
    def text(self) -> str:
        return "\n".join(entry_text(e).plain for e in self.entries)

    def compose(self) -> ComposeResult:
        n = len(self.entries)
        with Vertical(classes="modal-box", id="messages-box"):
            yield Static(Text(f"Messages: {n} latest, newest first"), classes="modal-title")
            with VerticalScroll(id="messages-list"):
                if not self.entries:
                    yield Static(Text("No message yet."), classes="modal-hint")
                for entry in self.entries:
                    yield Static(entry_text(entry), classes="message")
            yield Static(Text(f"↑↓ PgUp PgDn: scroll · {self.dismiss_key}: clear the flash line · Esc: close"),
                         classes="modal-keys")

    def on_mount(self) -> None:
        self.query_one("#messages-list").focus()
