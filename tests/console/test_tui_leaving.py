"""One rule for leaving a screen: Esc backs out of every screen and modal of the registry,
`q` quits only from the dashboard (elsewhere it backs out, or types into a focused field),
and focus lands on a view's table so the row keys act on the highlighted row."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from textual.screen import Screen
from textual.widgets import DataTable, Input

from screens import SCOPES
from screens.add_key import AddKeyScreen
from screens.audit_view import AuditScreen
from screens.column_chooser import ColumnChooser
from screens.command_line import CommandLine
from screens.config_view import ConfigScreen
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.detail import DetailScreen
from screens.fallback_edit import FallbackAddScreen
from screens.findings_view import FindingsScreen
from screens.fleet_view import FleetScreen
from screens.help import HelpScreen
from screens.message_log import MessagesScreen
from screens.monitor_view import MonitorScreen
from screens.probe_result import ProbeResultScreen
from screens.profile_config_view import ProfileConfigScreen
from screens.profile_picker import ProfilePicker
from screens.proxy_view import ProxyScreen, RouteScreen
from screens.request_log import RequestLogScreen
from screens.routing_edit import RoutingEditScreen
from screens.strategy import StrategyScreen
from store.ops.probe_report import ProbeReport
from store.paths import Home
from store.profiles.inventory import read_root
from store.profiles.root import Root
from tests.tui_sample import NOW, app_for, config_home, settle, write_sample
from tui.services.clock import FakeClock
from tui.services.fleet_feed import FleetConfig, FleetLink
from tui.widgets import CredentialTable
from tui.widgets.guarded import GuardedModal

pytestmark = pytest.mark.usefixtures("utc")

# How to open each screen of the registry (the table is a widget of the dashboard).
OPEN: dict[str, Callable[[Any], Screen]] = {
    "detail": lambda app: DetailScreen(("openrouter", "a1b2c3"), app.clock),
    "config": lambda app: ConfigScreen(),
    "confirm": lambda app: ConfirmScreen("Reset?", ["openrouter #1"]),
    "add key": lambda app: AddKeyScreen(["openrouter"]),
    "cooldown": lambda app: CooldownScreen(app.clock, ["openrouter #1"]),
    "strategy": lambda app: StrategyScreen("openrouter", None),
    "fallback": lambda app: FallbackAddScreen(),
    "routing": lambda app: RoutingEditScreen("sort", "price"),
    "probe": lambda app: ProbeResultScreen(ProbeReport("openrouter", NOW, True)),
    "audit": lambda app: AuditScreen("audit.jsonl", []),
    "help": lambda app: HelpScreen([("app", "q", "Quit", "app.quit")]),
    "proxy": lambda app: ProxyScreen(app.home),
    "monitor": lambda app: MonitorScreen(app.home, start_hint="hermes-admin monitor"),
    "proxy pin": lambda app: RouteScreen([("openrouter", "▶ openrouter"), ("nous", "  nous")], 8645),
    # Nothing listens on port 1: the view opens disconnected, which is all leaving needs.
    "fleet": lambda app: FleetScreen(FleetLink(FleetConfig(url="redis://127.0.0.1:1", host="t"), app.home),
                                     tick=False),
    "profile picker": lambda app: ProfilePicker(read_root(Root(app.home.root)), None),
    "command line": lambda app: CommandLine(app.commands.specs(), app.commands.vocabulary()),
    "findings": lambda app: FindingsScreen([]),
    "profile config": lambda app: ProfileConfigScreen(read_root(Root(app.home.root))[0]),
    "columns": lambda app: ColumnChooser(["label", "status"], "auto"),
    "messages": lambda app: MessagesScreen(list(app.messages)),
    "requests": lambda app: RequestLogScreen(app.home, "openrouter", "a1b2c3", "primary", follow=False),
}
# The profiles dashboard is the dashboard over a root (tests/console/test_tui_profiles.py).
NOT_SCREENS = {"dashboard", "table", "profiles"}


def test_every_registered_screen_is_covered() -> None:
    """A screen added to the registry fails here until it has an opener above."""
    assert {name for name, _cls in SCOPES} - NOT_SCREENS == set(OPEN)
    for name, cls in SCOPES:
        if name in OPEN:
            assert issubclass(cls, Screen)


@pytest.mark.parametrize("name", sorted(OPEN))
async def test_esc_and_q_back_out_of_every_screen_and_never_quit(tmp_home: Home, name: str) -> None:
    """Each backs out of exactly one screen: opened over another view, that view is back."""
    config_home(tmp_home)
    app = app_for(tmp_home, clock=FakeClock(NOW))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        if name != "detail":
            app.push_screen(OPEN["detail"](app))
            await pilot.pause()
        under = app.screen
        for key in ("escape", "q"):
            app.push_screen(OPEN[name](app))
            await pilot.pause()
            opened = app.screen
            assert opened is not under
            # A guarded modal takes only keys pressed once it is on screen: on a busy machine
            # one pause may not see it mounted (bounded wait).
            for _ in range(100):
                if not isinstance(opened, GuardedModal) or opened.shown_at is not None:
                    break
                await pilot.pause()
            await pilot.press(key)
            await pilot.pause()
            assert app.is_running, f"{key} quit the app from {name}"
            if key == "q" and isinstance(app.focused, Input):
                # A text field takes q as a letter; Esc still backs out.
                assert app.screen is opened
                await pilot.press("escape")
                await pilot.pause()
            assert app.screen is under, f"{key} did not back out of {name} (one screen)"
        await settle(app, pilot)


async def test_q_quits_from_the_dashboard_and_esc_does_not(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.focused, CredentialTable)
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


@pytest.mark.parametrize("name", ["config", "probe", "audit"])
async def test_focus_lands_on_the_views_table(tmp_home: Home, name: str) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 40)) as pilot:
        app.push_screen(OPEN[name](app))
        await pilot.pause()
        assert isinstance(app.focused, DataTable), app.focused
    # (Help is the exception: its filter field takes the typing; ↓ goes to the table.)


async def test_config_view_focus_follows_tabs_and_x_acts_on_the_highlighted_row(
        tmp_home: Home) -> None:
    config_home(tmp_home)
    tmp_home.config.write_text(tmp_home.config.read_text().replace(
        "provider_routing:", "  - provider: anthropic\n    model: claude-third\nprovider_routing:"))
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ConfigScreen)
        await pilot.press("2")            # the fallback tab: three entries
        await pilot.pause()
        table = app.screen.query_one("#fallback-table", DataTable)
        assert app.focused is table
        await pilot.press("down", "down")
        await pilot.pause()
        assert table.cursor_row == 2
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "#3" in app.screen.title_text and "claude-third" in app.screen.title_text
        await pilot.press("y")
        await settle(app, pilot)
        text = tmp_home.config.read_text()
        assert "claude-third" not in text
        assert "anthropic/claude-sonnet-4" in text and "model: local" in text
