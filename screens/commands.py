"""Command palette entries (ctrl+p), derived from the bindings like `?` help is.

A binding that belongs in the palette carries its palette wording in its ``tooltip``:
``"Name — what it does"``. The app's bindings run on the app, the dashboard's through
``dashboard_action`` (which says why an unavailable one cannot run); the config tabs
come from the config screen's own TABS. Nothing here restates a key or an action list.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Iterable, cast

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from screens.config_view import TABS
from screens.dashboard import DashboardScreen
from tui.services.host import Host

Command = tuple[str, str, Callable[[], object]]


def palette_entries(bindings: Iterable[Binding | tuple]) -> list[tuple[str, str, str]]:
    """(name, help, action) of each binding whose tooltip names a palette entry."""
    out = []
    for b in Binding.make_bindings(bindings):
        if b.tooltip:
            name, _, help_text = b.tooltip.partition(" — ")
            out.append((name, help_text, b.action))
    return out


class ConsoleCommands(Provider):
    """Screens and actions of the console, searchable by name."""

    def _commands(self) -> list[Command]:
        app = self.app
        run, dash = app.run_action, cast(Host, app).dashboard_action
        app_entries = palette_entries(type(app).BINDINGS)
        cmds: list[Command] = [("Dashboard", "back to the credential table",
                                partial(run, "show_dashboard"))]
        cmds += [(n, h, partial(run, a)) for n, h, a in app_entries if a != "quit"]
        cmds += [(n, h, partial(dash, a)) for n, h, a in palette_entries(DashboardScreen.BINDINGS)]
        cmds += [(f"Config: {title}", "config.yaml as the agent reads it", partial(run, f"show_config('{key}')"))
                 for key, title in TABS.items()]
        cmds += [(n, h, partial(run, a)) for n, h, a in app_entries if a == "quit"]
        return cmds

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
