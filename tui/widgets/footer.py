"""The console's footer: Textual's Footer, recomposed once per burst of binding changes.

Textual's Footer schedules a full recompose (every key widget made and styled again) for
each ``refresh_bindings`` a screen publishes; at start-up and on a cursor move the dashboard
publishes several in one refresh, and each one rebuilt the footer. This one schedules at most
one recompose at a time: the one that runs reads the bindings as they are by then.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """A Footer that coalesces binding changes into one pending recompose."""

    _recompose_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        # Textual recomposes only for its own screen while the app has focus: the same test
        # here, or a pending flag set for a recompose never scheduled would freeze the footer.
        schedules = bool(screen.app.app_focus) and self.is_attached and screen is self.screen
        if schedules and self._recompose_pending:
            return
        self._recompose_pending = schedules
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        """Rebuild the keys (the pending one clears first: a change from now on schedules anew)."""
        self._recompose_pending = False
        await super().recompose()
