"""Command palette entries (ctrl+p): every screen and dashboard action by name."""

from __future__ import annotations

from functools import partial
from typing import Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .config_view import TABS


class ConsoleCommands(Provider):
    """Screens and actions of the console, searchable by name."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        run = app.run_action
        dash = app.dashboard_action
        cmds: list[tuple[str, str, Callable[[], object]]] = [
            ("Dashboard", "back to the credential table", app.action_show_dashboard),
            ("Help: keys", "every key binding", partial(run, "help")),
            ("Filter credentials", "label, id, source, pool or status",
             partial(dash, "filter")),
            ("Sort: next order", "priority, status, time left, label, requests",
             partial(dash, "sort")),
            ("Pause / resume live updates", "hold store changes while reading",
             partial(dash, "pause")),
            ("Toggle wide columns", "auth, source, resets at, message, ids...",
             partial(dash, "wide")),
            ("Toggle events timeline", "transitions seen in the store",
             partial(dash, "events")),
            ("Credential detail", "every field of the selected row",
             partial(dash, "detail")),
            ("Add a key", "new API key in a pool (masked input)", partial(dash, "add")),
            ("Reset cooldown", "selected or tagged rows; stamps status_cleared_at",
             partial(dash, "reset")),
            ("Set a cooldown", "bench the selected or tagged rows by hand",
             partial(dash, "cooldown")),
            ("Remove credential", "the selected row, after confirmation", partial(dash, "remove")),
            ("Move up in priority", "the selected row, one place", partial(dash, "move_up")),
            ("Move down in priority", "the selected row, one place", partial(dash, "move_down")),
            ("Strategy of this pool", "fill_first, round_robin, random, least_used",
             partial(dash, "strategy")),
            ("Probe this pool", "ask the provider if benched keys reopened; lift those",
             partial(dash, "probe")),
            ("Tag / untag row", "for bulk reset and cooldown", partial(dash, "tag")),
            ("Clear all tags", "untag every row", partial(dash, "clear_tags")),
            ("Audit log", "the latest operator actions", partial(dash, "audit")),
        ]
        for key, title in TABS.items():
            cmds.append((f"Config: {title}", "config.yaml as the agent reads it",
                         partial(app.action_show_config, key)))
        cmds.append(("Quit", "leave hermes-admin", partial(run, "quit")))
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
