"""The app shell's screen-level actions: opening views, and the one rule for leaving them.

Part of the app shell (only ``tui.app.console`` uses it): `q` quits from the dashboard only and
backs out anywhere else, as Esc does; views open over the dashboard; the command palette's
dashboard actions run there. Kept apart so the App class itself stays a wiring list.
"""

from __future__ import annotations

from textual import events
from textual.app import App

from screens import SCOPES
from screens.config_view import ConfigScreen
from screens.dashboard import DashboardScreen
from screens.fleet_view import FleetScreen
from screens.help import HelpScreen, binding_rows
from tui.services.fleet_feed import FleetConfig, FleetLink

# Every scope whose keys `?` lists, in the order shown: the screen registry's.
HELP_SCOPES = SCOPES


class ScreenActions(App):
    """Mixin for :class:`tui.app.console.HermesAdminApp` (declared an App so the actions type-check)."""

    fleet: FleetConfig | None
    _fleet_link: FleetLink | None
    _tick: bool

    @property
    def dashboard(self) -> DashboardScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, DashboardScreen)
        return screen

    async def action_back_or_quit(self) -> None:
        """`q`: quit on the dashboard; anywhere else do what Esc does there (never quit)."""
        screen = self.screen
        if screen is self.screen_stack[0] and isinstance(screen, DashboardScreen):
            await self.action_quit()
            return
        escape = screen.active_bindings.get("escape")
        if escape is not None and escape.enabled:
            await self.run_action(escape.binding.action, escape.node)
        elif len(self.screen_stack) > 1:
            self.pop_screen()

    async def on_key(self, event: events.Key) -> None:
        # A modal's binding chain leaves out the app's keys, so its unhandled `q` lands here
        # (a focused text field has already taken it as a letter): back out, as Esc does.
        if event.is_forwarded and self.screen.is_modal and any(
                b.action == "back_or_quit" for b in self._bindings.key_to_bindings.get(event.key, ())):
            event.stop()
            event.prevent_default()      # or the app's own binding would run next, on the dashboard
            await self.action_back_or_quit()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(binding_rows(self, [("app", type(self)), *HELP_SCOPES])))

    def action_show_dashboard(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_show_config(self, tab: str = "strategies") -> None:
        self.action_show_dashboard()
        self.push_screen(ConfigScreen(tab))

    def action_fleet(self) -> None:
        if self.fleet is None:
            self.notify("no fleet: start hermes-admin with --fleet URL", severity="warning",
                        timeout=4, markup=False)
            return
        if any(isinstance(s, FleetScreen) for s in self.screen_stack):
            return  # already open (perhaps under one of its modals)
        if self._fleet_link is None:
            self._fleet_link = FleetLink(self.fleet, self.home)
        self.action_show_dashboard()
        self.push_screen(FleetScreen(self._fleet_link, tick=self._tick))

    def dashboard_action(self, action: str) -> None:
        """Run a dashboard action from anywhere (command palette); an unavailable one says why."""
        self.action_show_dashboard()
        self.call_later(self.dashboard.attempt, action)
