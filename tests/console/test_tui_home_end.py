"""Home and End go to the first and last row in every table of the console, as on the
dashboard (the same binding ids, ``table.top`` and ``table.bottom``): in the config view
End then ``e`` edits the last row, not the one the cursor was on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.widgets import DataTable

from screens.audit_view import AuditScreen
from screens.config_view import ConfigScreen
from screens.strategy import StrategyScreen
from store.paths import Home
from tests.tui_sample import app_for, config_home, on_row, settle, write_sample
from tui.widgets.plain_table import PlainTable

pytestmark = pytest.mark.usefixtures("utc")

SCREENS = Path(__file__).resolve().parents[2] / "screens"


async def test_config_view_home_and_end_in_every_tab(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("v")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ConfigScreen)
        for tab in ("strategies", "fallback", "routing"):
            await pilot.press({"strategies": "1", "fallback": "2", "routing": "3"}[tab])
            await pilot.pause()
            table = screen.query_one(f"#{tab}-table", DataTable)
            assert app.focused is table and table.row_count >= 2, tab
            await pilot.press("end")
            await pilot.pause()
            assert table.cursor_row == table.row_count - 1, tab
            await pilot.press("home")
            await pilot.pause()
            assert table.cursor_row == 0, tab
            await pilot.press("ctrl+end")
            await pilot.pause()
            assert table.cursor_row == table.row_count - 1, tab
        # End then e: the strategy picker of the last pool (openrouter), not the first.
        await pilot.press("1", "end")
        await pilot.pause()
        last = screen.shown_rows["strategies-table"][-1][0]
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, StrategyScreen) and app.screen.pool == last == "openrouter"


async def test_audit_view_home_and_end(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        for rid in ("d4e5f6", "a1b2c3"):
            await on_row(app, pilot, "openrouter", rid)
            await pilot.press("J")
            await settle(app, pilot)
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, AuditScreen)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2 and table.cursor_row == 0
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == 1
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0


def test_every_screen_table_is_a_plain_table() -> None:
    """No screen builds a bare DataTable (whose Home and End scroll sideways only)."""
    bare = {p.name: n for p in SCREENS.glob("*.py")
            if (n := len(re.findall(r"(?<![\w.])DataTable\(", p.read_text())))}
    assert bare == {}
    keys = {b.key: b.id for b in PlainTable.BINDINGS}  # type: ignore[union-attr]
    assert keys == {"home,ctrl+home": "table.top", "end,ctrl+end": "table.bottom"}
