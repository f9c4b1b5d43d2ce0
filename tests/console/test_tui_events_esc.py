"""Esc closes the events panel as ``e`` does (after a range mark or a filter, which Esc ends
first); a question about several longer benches reads ``2 longer benches``."""

from __future__ import annotations

import pytest

from screens.dashboard_changes import count
from store.paths import Home
from tests.tui_sample import app_for, settle, write_sample

pytestmark = pytest.mark.usefixtures("utc")


def test_count_says_benches() -> None:
    assert count(2, "longer bench") == "2 longer benches"
    assert count(1, "longer bench") == "1 longer bench"
    assert count(3) == "3 credentials" and count(2, "row") == "2 rows" and count(0, "box") == "0 boxes"


async def test_escape_closes_the_events_panel(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        dash = app.dashboard
        await pilot.press("e")
        await settle(app, pilot)
        assert dash.timeline.shown and dash.query_one("#events").display
        await pilot.press("escape")
        await settle(app, pilot)
        assert not dash.timeline.shown and not dash.query_one("#events").display
        assert app.screen is dash
        # A filter first: Esc clears it, the next Esc closes the panel.
        await pilot.press("e", "slash", *"ok", "enter")
        await settle(app, pilot)
        assert dash.filter_text == "ok" and dash.timeline.shown
        await pilot.press("escape")
        await settle(app, pilot)
        assert dash.filter_text == "" and dash.timeline.shown
        await pilot.press("escape")
        await settle(app, pilot)
        assert not dash.timeline.shown
