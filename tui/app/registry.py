"""The app shell's screens: the views it opens over the dashboard, and the one rule for leaving them.

Part of the app shell (only ``tui.app.console`` uses it): `q` quits from the dashboard only and
backs out anywhere else, as Esc does; views open over the dashboard; the command palette's
dashboard actions run there. The app owns one :class:`Views` (which holds the fleet link,
opened once and reused) and its ``action_*`` methods call it, so the App class stays a
wiring list.
"""

from __future__ import annotations

from typing import Mapping

from textual.app import App

from screens import scopes, screen
from screens.dashboard import DashboardScreen
from store.paths import Home
from tui.services.fleet_feed import FleetConfig, FleetLink
from tui.widgets.flash import MessageLog


def help_scopes() -> tuple[tuple[str, type], ...]:
    """Every scope whose keys `?` lists, in the order shown: the screen registry's (each
    screen's module imported: help is the one view that needs them all)."""
    return scopes()


class Views:
    """What the app opens and closes; *app* is the running :class:`tui.app.console.HermesAdminApp`."""

    def __init__(self, app: App, *, fleet: FleetConfig | None, tick: bool) -> None:
        self.app = app
        self.fleet = fleet                      # None: no --fleet, `F` says how to get one
        self.fleet_link: FleetLink | None = None
        self.tick = tick

    @property
    def dashboard(self) -> DashboardScreen:
        screen = self.app.screen_stack[0]
        assert isinstance(screen, DashboardScreen)
        return screen

    async def back_or_quit(self) -> None:
        """`q`: quit on the dashboard; anywhere else do what Esc does there (never quit)."""
        app = self.app
        screen = app.screen
        if screen is app.screen_stack[0] and isinstance(screen, DashboardScreen):
            await app.action_quit()
            return
        escape = screen.active_bindings.get("escape")
        if escape is not None and escape.enabled:
            await app.run_action(escape.binding.action, escape.node)
        elif len(app.screen_stack) > 1:
            app.pop_screen()

    def help(self, keymap: Mapping[str, str], query: str = "") -> None:
        """`?`: every key of the app and its screens, *keymap* (the operator's) applied;
        *query* filters them at once (``:help reset``)."""
        app = self.app
        help_screen = screen("help")
        if isinstance(app.screen, help_screen):
            return
        app.push_screen(help_screen.of(app, [("app", type(app)), *help_scopes()], keymap, query=query))

    def messages(self, log: MessageLog) -> None:
        """`M`: the message log, every message in full, newest first."""
        messages = screen("messages")
        if isinstance(self.app.screen, messages):
            return
        self.app.push_screen(messages(list(log), log.keys["dismiss"]))

    def show_dashboard(self) -> None:
        while len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def show_config(self, tab: str = "strategies") -> None:
        self.show_dashboard()
        self.app.push_screen(screen("config")(tab))

    def show_fleet(self, home: Home) -> None:
        """`F`: the fleet view of *home* (the app's, at the first opening: the link is kept)."""
        app = self.app
        if self.fleet is None:
            app.notify("no fleet: start hermes-admin with --fleet URL", severity="warning",
                       timeout=4, markup=False)
            return
        fleet_screen = screen("fleet")
        if any(isinstance(s, fleet_screen) for s in app.screen_stack):
            return  # already open (perhaps under one of its modals)
        if self.fleet_link is None:
            self.fleet_link = FleetLink(self.fleet, home)
        self.show_dashboard()
        app.push_screen(fleet_screen(self.fleet_link, tick=self.tick))

    def dashboard_action(self, action: str) -> None:
        """Run a dashboard action from anywhere (command palette); an unavailable one says why."""
        self.show_dashboard()
        self.app.call_later(self.dashboard.attempt, action)
