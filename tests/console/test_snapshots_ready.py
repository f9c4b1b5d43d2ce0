"""The snapshot tests' readiness wait (tests/tui_sample.py ``ready``) can fail: a screen whose
tables never fit their width is reported, not captured half-drawn."""

from __future__ import annotations

import pytest

from tests.tui_sample import make_app, ready, write_sample
from tui.widgets.plain_table import FittedTable

pytestmark = pytest.mark.usefixtures("utc")


async def _open_help(home) -> list[int]:
    app = make_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await ready(pilot)
        assert all(w.is_finished for w in app.workers)
        return [t.fitted - t.size.width for s in app.screen_stack for t in s.query(FittedTable)]


async def test_ready_waits_for_the_fitted_tables(home_at) -> None:
    home = home_at("ready")
    write_sample(home)
    gaps = await _open_help(home)
    assert gaps and set(gaps) == {0}


async def test_ready_fails_when_a_table_never_fits(home_at, monkeypatch) -> None:
    """Negative control: tables that never record their fit make ready() raise (bounded)."""
    home = home_at("ready-never")
    write_sample(home)
    monkeypatch.setattr(FittedTable, "fitted", property(lambda self: -2, lambda self, v: None))
    with pytest.raises(AssertionError, match="never fitted"):
        await _open_help(home)


async def _help_cursor_after(home, wait) -> bool:
    """Open help, put its filter field's cursor on the off half of a blink, *wait*, and say
    whether the cursor is shown."""
    from textual.widgets import Input

    app = make_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        field = app.screen.query_one(Input)
        field._blink_timer.pause()      # held, not timed: the test must not race the blink
        field._cursor_visible = False   # the off half-second a slow capture can land on
        await wait(pilot)
        return field._cursor_visible


async def test_ready_shows_the_cursor(home_at) -> None:
    home = home_at("ready-cursor")
    write_sample(home)
    assert await _help_cursor_after(home, ready)


async def test_a_plain_pause_leaves_the_cursor_off(home_at) -> None:
    """Negative control: without ready() the blink's off phase stays."""
    home = home_at("ready-cursor-off")
    write_sample(home)
    assert not await _help_cursor_after(home, lambda pilot: pilot.pause())
