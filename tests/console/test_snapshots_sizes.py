"""Snapshot tests of the dashboard at 80x24, 120x40 and 200x50, and of what acts on more
than one row (a whole pool, a range mark, the column chooser).

The home is the TUI sample plus a pool with a 40-character name whose rows hold the
longest reasons Hermes writes (tests/layout_sample.py): at 80 columns the pool header
keeps its counts, at 200 every reason is whole. Deterministic as tests/console/
test_snapshots.py is: a frozen clock, no watcher, no tick, TZ=UTC, a fixed home path.
"""

from __future__ import annotations

import pytest

from tests.layout_sample import write_layout_sample
from tests.tui_sample import make_app, ready, table_of

pytestmark = pytest.mark.usefixtures("utc")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)], ids=["80x24", "120x40", "200x50"])
def test_dashboard(snap_compare, size, home_at) -> None:
    home = home_at(f"sizes-{size[0]}")
    write_layout_sample(home)
    assert snap_compare(make_app(home), terminal_size=size, run_before=ready)


def test_dashboard_wide_at_200x50(snap_compare, home_at) -> None:
    home = home_at("sizes-wide")
    write_layout_sample(home)

    async def wide(pilot) -> None:
        await pilot.press("w")
        await ready(pilot)

    assert snap_compare(make_app(home), terminal_size=(200, 50), run_before=wide)


def test_whole_pool_reset_names_its_rows(snap_compare, home_at) -> None:
    home = home_at("sizes-pool")
    write_layout_sample(home)
    app = make_app(home)

    async def reset_pool(pilot) -> None:
        await pilot.pause()
        table_of(app).move_to_key("pool\x1fopenrouter")
        await pilot.press("r")
        await ready(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=reset_pool)


def test_range_mark(snap_compare, home_at) -> None:
    home = home_at("sizes-range")
    write_layout_sample(home)
    app = make_app(home)

    async def mark(pilot) -> None:
        await pilot.pause()
        table_of(app).move_to_key("cred\x1fanthropic\x1faa11bb")
        await pilot.press("m", "down", "down", "down")
        await pilot.pause()
        app.clear_notifications()   # the hint toast: its timing is not the screen's
        await ready(pilot)

    assert snap_compare(app, terminal_size=(100, 24), run_before=mark)


def test_column_chooser(snap_compare, home_at) -> None:
    home = home_at("sizes-columns")
    write_layout_sample(home)

    async def choose(pilot) -> None:
        await pilot.pause()
        await pilot.press("W", "down", "space")
        await ready(pilot)

    assert snap_compare(make_app(home), terminal_size=(100, 30), run_before=choose)


def test_column_chooser_80x24(snap_compare, home_at) -> None:
    """At 80 columns a long line (source, spend) wraps under its own words, not under the box."""
    home = home_at("sizes-columns-80")
    write_layout_sample(home)

    async def choose(pilot) -> None:
        await pilot.pause()
        await pilot.press("W", "down", "space")
        await ready(pilot)

    assert snap_compare(make_app(home), terminal_size=(80, 24), run_before=choose)
