"""Help filters as the operator types and leaves Textual's noise out; the audit view fits
80 columns and shows the highlighted entry's before and after."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, Static

from screens.audit_view import AuditScreen, entry_detail
from screens.help import HelpScreen, matching
from store.paths import Home
from tests.tui_sample import NOW, app_for, on_row, settle, write_sample

pytestmark = pytest.mark.usefixtures("utc")


def help_rows(app) -> list[list[str]]:
    table = app.screen.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_matching_needs_every_word() -> None:
    rows = [("dashboard", "r", "Reset", "dashboard.reset"), ("config", "x", "Remove", "config.remove")]
    assert matching(rows, "") == rows
    assert matching(rows, "RE") == rows
    assert matching(rows, "config re") == [rows[1]]
    assert matching(rows, "nothing") == []


async def test_help_filters_live_and_shows_no_noise(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert isinstance(app.focused, Input)            # typing filters at once
        everything = help_rows(app)
        assert not [r for r in everything if r[2] in ("Focus Next", "Copy selected text")]
        assert all(r[3] != "—" for r in everything)      # every row is one of our bindings
        await pilot.press(*"tag")
        await pilot.pause()
        shown = help_rows(app)
        assert shown and len(shown) < len(everything)
        assert ["dashboard", "space", "Tag / untag", "dashboard.tag"] in shown
        assert all(any("tag" in c.lower() for c in r) for r in shown)
        assert "of" in str(app.screen.query_one("#help-title", Static).render())
        await pilot.press("down")                         # into the list
        await pilot.pause()
        assert isinstance(app.focused, DataTable)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_audit_view_fits_80_columns_and_shows_before_and_after(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        await settle(app, pilot)
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("J")
        await settle(app, pilot)
        await pilot.press("L")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        table = screen.query_one(DataTable)
        assert table.row_count == 2
        assert table.max_scroll_x == 0                    # no horizontal scrolling at 80 columns
        assert [str(c.label) for c in table.columns.values()] == ["time", "action", "pool", "rows"]
        detail = screen.query_one("#audit-detail", Static)
        first = str(detail.render())
        assert "priority" in first and "primary" in first       # newest first: the move
        await pilot.press("down")
        await pilot.pause()
        second = str(detail.render())
        assert "backup-key (d4e5f6): exhausted → ok" in second
        assert "last_error_code" in second and "402 → —" in second


def test_entry_detail_lists_only_what_changed() -> None:
    entry = {"time": NOW, "user": "ops", "host": "h", "via": "cli", "action": "cooldown",
             "pool": "openrouter",
             "changes": [{"id": "a1", "label": "primary",
                          "before": {"last_status": None, "request_count": 3},
                          "after": {"last_status": "exhausted", "request_count": 3}}]}
    lines = entry_detail(entry)
    assert lines[1] == "primary (a1): ok → exhausted"
    assert any(line.split() == ["last_status", "—", "→", "exhausted"] for line in lines)
    assert not any("request_count" in line for line in lines)
