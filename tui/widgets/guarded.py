"""A modal whose answer changes the store: it answers only to keys pressed after it was shown.

The confirmations (reset, remove, undo, everywhere...) and the cooldown form derive from
:class:`GuardedModal`. It notes the time it was mounted (its first paint follows at once: a
key created before that was typed before anything of it could be seen), on the clock of
Textual's ``Message.time``, which every key carries; the app's key dispatch
(:mod:`tui.app.key_order`) hands it no key created before that time, so a key that arrived
in the same burst as the key that opened it does nothing, and a deliberate key does.
"""

from __future__ import annotations

from textual import events
from textual.screen import ModalScreen, ScreenResultType


class GuardedModal(ModalScreen[ScreenResultType]):
    """A modal that takes only keys created after it was on screen (see the module docstring)."""

    shown_at: float | None = None       # the Mount event's Message.time; None: not mounted yet
    told = False                        # the operator was told a key was ignored (once per modal)

    def on_mount(self, event: events.Mount) -> None:
        # The Mount event's own time: the clock every key's Message.time is on.
        self.shown_at = event.time

    def answers_to(self, key_time: float) -> bool:
        """Whether a key created at *key_time* (monotonic) was pressed after this was on screen."""
        return self.shown_at is not None and key_time >= self.shown_at
