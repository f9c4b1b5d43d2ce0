"""The profile switcher, k9s-context style: ``P`` opens a picker (``:profile <name>`` and
``:profile all`` are the command line's forms, screens.command_words).

It dismisses with the chosen context: a profile name, ``""`` for every profile, or None
when cancelled.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from store.profiles.inventory import ProfileInventory

ALL = ""


def health_text(inv: ProfileInventory) -> str:
    """``3 ok · 1 cooling · 0 dead`` or ``✖ ERROR <reason>`` for a corrupt profile."""
    if inv.error is not None:
        return f"✖ ERROR {inv.error.reason}"
    h = inv.health()
    return f"{h['ok']} ok · {h['cooling']} cooling · {h['ready']} ready · {h['dead']} dead"


class ProfilePicker(ModalScreen[str | None]):
    """Every profile with its health; Enter narrows the console to it."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="picker.cancel")]

    def __init__(self, profiles: Sequence[ProfileInventory], current: str | None) -> None:
        super().__init__(classes="modal")
        self.profiles = list(profiles)
        self.current = current

    def compose(self) -> ComposeResult:
        options = [Option(Text(f"all profiles ({len(self.profiles)})"), id="__all__")]
        for inv in self.profiles:
            mark = "● " if inv.name == self.current else "  "
            options.append(Option(Text(f"{mark}{inv.name:<20} {health_text(inv)}"), id=inv.name))
        with Vertical(classes="modal-box", id="picker-box"):
            yield Static(Text("Switch profile (Enter: narrow to it · Esc: cancel)"), classes="modal-title")
            yield OptionList(*options, id="picker")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id
        self.dismiss(ALL if oid == "__all__" else oid)

    def action_cancel(self) -> None:
        self.dismiss(None)
