"""Command palette entries (ctrl+p), derived from the bindings like `?` help is, each with its key.

A binding that belongs in the palette carries its palette wording in its ``tooltip``:
``"Name — what it does"``. The app's bindings run on the app, the dashboard's through
``dashboard_action`` (which says why an unavailable one cannot run); the config tabs
come from the config screen's own TABS. Each entry shows the key that does the same (the
operator's keymap applied), so the palette teaches the keys. Nothing here restates a key
or an action list.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Iterable, NamedTuple, Protocol, cast

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from screens.config_view import TABS, ConfigScreen
from screens.dashboard import DashboardScreen


class Command(NamedTuple):
    """One palette entry: its name, the key that does the same, what it does, and the call."""

    name: str
    key: str
    help: str
    run: Callable[[], object]


class PaletteHost(Protocol):
    """What the palette asks of the app (the app shell provides it)."""

    def dashboard_action(self, action: str) -> None: ...

    def key_of(self, binding_id: str, default: str) -> str: ...


def palette_entries(bindings: Iterable[Binding | tuple]) -> list[tuple[str, str, str, Binding]]:
    """(name, help, action, binding) of each binding whose tooltip names a palette entry."""
    out = []
    for b in Binding.make_bindings(bindings):
        if b.tooltip:
            name, _, help_text = b.tooltip.partition(" — ")
            out.append((name, help_text, b.action, b))
    return out


def with_key(name: Content | str, key: str) -> Content:
    """The palette's line: the entry's name, then its key."""
    head = name if isinstance(name, Content) else Content(name)
    return Content.assemble(head, ("  " + key, "bold $text-accent")) if key else head


class ConsoleCommands(Provider):
    """Screens and actions of the console, searchable by name, each with its key."""

    def commands(self) -> list[Command]:
        app = self.app
        host = cast(PaletteHost, app)
        run, dash = app.run_action, host.dashboard_action

        def key(b: Binding) -> str:
            return host.key_of(b.id, b.key) if b.id else app.get_key_display(b)

        app_entries = palette_entries(type(app).BINDINGS)
        cmds = [Command("Dashboard", "", "back to the credential table", partial(run, "show_dashboard"))]
        cmds += [Command(n, key(b), h, partial(run, a)) for n, h, a, b in app_entries if a != "back_or_quit"]
        cmds += [Command(n, key(b), h, partial(dash, a)) for n, h, a, b in palette_entries(DashboardScreen.BINDINGS)]
        config = next((b for b in DashboardScreen.BINDINGS if isinstance(b, Binding) and b.action == "config"), None)
        tab_keys = {b.action: key(b) for b in Binding.make_bindings(ConfigScreen.BINDINGS)}
        prefix = key(config) + " " if config is not None else ""
        cmds += [Command(f"Config: {title}", prefix + tab_keys.get(f"tab('{k}')", ""),
                         "config.yaml as the agent reads it", partial(run, f"show_config('{k}')"))
                 for k, title in TABS.items()]
        cmds += [Command(n, key(b), h, partial(run, a)) for n, h, a, b in app_entries if a == "back_or_quit"]
        return cmds

    async def discover(self) -> Hits:
        for name, key, help_text, callback in self.commands():
            yield DiscoveryHit(with_key(name, key), callback, text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, key, help_text, callback in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, with_key(matcher.highlight(name), key), callback, text=name, help=help_text)
