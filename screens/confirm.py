"""A yes/no question before a change that cannot be taken back: ``y`` confirms, ``n``/Esc cancels."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from tui.text.shown import shown
from tui.widgets.guarded import GuardedModal


class ConfirmScreen(GuardedModal[bool]):
    """Dismisses with True on ``y``, False on ``n`` or Escape. Nothing else answers it."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes, do it", id="confirm.yes"),
        Binding("n", "answer(False)", "No", id="confirm.no"),
        Binding("escape", "answer(False)", "Cancel", id="confirm.cancel"),
    ]

    def __init__(self, title: str, lines: Sequence[str], notes: Sequence[str] = (),
                 *, yes: str = "y: yes", no: str = "n / Esc: no, leave everything as it is") -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.lines = list(lines)
        self.notes = list(notes)
        self.keys_text = f"{yes}   ·   {no}"

    @property
    def text(self) -> str:
        """Everything the question says (for tests and screen readers)."""
        return "\n".join([self.title_text, *self.lines, *self.notes, self.keys_text])

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="confirm-box"):
            yield Static(Text(shown(self.title_text)), classes="modal-title")
            # Text, not markup: labels and reasons come from auth.json.
            yield Static(Text("\n".join(shown(x) for x in self.lines)), id="confirm-lines")
            if self.notes:
                yield Static(Text("\n".join(f"⚠ {shown(n)}" for n in self.notes)), classes="modal-notes")
            yield Static(Text(self.keys_text), classes="modal-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(bool(yes))
