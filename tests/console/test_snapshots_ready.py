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
