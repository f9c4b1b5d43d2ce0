"""Snapshots of #28's screens at 80x24 and 200x50: ``l``'s request log, a pool header that says
when the pool is usable again, and the dashboard with a headroom reading (the headroom giving
way first at 80). Deterministic as tests/console/test_snapshots.py (frozen clock, TZ=UTC,
homes at ``~/<name>``). Regenerate with ``--snapshot-update`` and look at the SVGs."""

from __future__ import annotations

import pytest

from tests.console.habits_helpers import FIVE_H, all_cooling, proxy_file, req, seed_sidecar
from tests.tui_sample import NOW, fitted, make_app, on_row, write_sample

pytestmark = pytest.mark.usefixtures("utc")
SIZES = [(80, 24), (200, 50)]
IDS = ["80x24", "200x50"]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_request_log(snap_compare, home_at, size) -> None:
    home = home_at("requests")
    write_sample(home)
    proxy_file(home, 8645, [req(NOW - 60, "openrouter", "a1b2c3", 200, "served"),
                            req(NOW - 40, "openrouter", "a1b2c3", 429, "passed_on")], pid=4242)
    proxy_file(home, 8646, [req(NOW - 45, "openrouter", "a1b2c3", 200, "fallback", route="nous")], pid=4243)
    app = make_app(home)

    async def open_log(pilot) -> None:
        await pilot.pause()
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("l")
        await pilot.pause()
        await fitted(pilot)

    assert snap_compare(app, terminal_size=size, run_before=open_log)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_usable_again(snap_compare, home_at, size) -> None:
    home = home_at("usable-again")
    all_cooling(home)
    assert snap_compare(make_app(home), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_headroom_gives_way_first(snap_compare, home_at, size) -> None:
    home = home_at("headroom-way")
    seed_sidecar(home, {"a1b2c3": [FIVE_H]})
    assert snap_compare(make_app(home), terminal_size=size)
