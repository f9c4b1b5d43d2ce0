"""The message line (the flash line) is the row above the footer at the bottom of the screen in
every screen that has one, at 80x24: in the config view's short tabs (fallback, routing), on
the dashboard while auth.json cannot be read (the table gone, a banner instead), and in the
proxy panel. And `x` on an empty fallback chain says the chain is empty."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Footer

from screens.config_view import ConfigScreen
from store.paths import Home
from store.proxy.observing.stats import write_status
from tests.console.proxy_panel_helpers import panel_of, status
from tests.tui_sample import CONFIG, app_for, config_home, settle, write_sample
from tui.widgets.flash import FlashLine

pytestmark = pytest.mark.usefixtures("utc")

SIZE = (80, 24)


def assert_at_bottom(app: Any, says: str) -> None:
    screen = app.screen
    flash = screen.query_one(FlashLine)
    footer = screen.query_one(Footer)
    assert says in flash.text
    assert flash.display and flash.region.height == 1
    assert footer.region.y == SIZE[1] - 1
    assert flash.region.y == SIZE[1] - 2, (flash.region, screen.id)


async def test_config_view_message_on_the_bottom_row(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("v")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfigScreen)
        await pilot.press("2", "K")          # the first entry cannot move up: a message says so
        await settle(app, pilot)
        assert_at_bottom(app, "already first")
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        unset = [r[1] for r in screen.shown_rows["routing-table"]].index("—")
        screen.query_one("#routing-table", DataTable).move_cursor(row=unset)
        await pilot.press("x")
        await settle(app, pilot)
        assert_at_bottom(app, "is not set")
        await pilot.press("1")
        app.notify("a message", timeout=30)
        await settle(app, pilot)
        assert_at_bottom(app, "a message")


async def test_empty_fallback_chain_says_so(tmp_home: Home) -> None:
    write_sample(tmp_home)
    tmp_home.config.write_text(CONFIG.split("fallback_providers:")[0])
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("v", "2")
        await settle(app, pilot)
        assert app.screen.shown_rows["fallback-table"] == []
        await pilot.press("x")
        await settle(app, pilot)
        assert_at_bottom(app, "the fallback chain is empty")
        assert "move the cursor" not in app.screen.query_one(FlashLine).text


async def test_dashboard_message_on_the_bottom_row_while_auth_json_is_unreadable(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.notify("a message", timeout=30)
        await settle(app, pilot)
        assert_at_bottom(app, "a message")


async def test_dashboard_and_proxy_panel_message_on_the_bottom_row(tmp_home: Home) -> None:
    write_sample(tmp_home)
    write_status(tmp_home, status())
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.notify("a message", timeout=30)
        await settle(app, pilot)
        assert_at_bottom(app, "a message")
        await pilot.press("x")
        await settle(app, pilot)
        panel_of(app)
        assert_at_bottom(app, "a message")
