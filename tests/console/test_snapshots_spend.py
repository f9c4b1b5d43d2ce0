"""Snapshots of spend (#29): the dashboard's spend column at 80x24 (chosen in the column
chooser: it gives way before code/reason) and 200x50 (the auto layout), and the detail
view with a key's usage at both sizes. Deterministic as tests/console/test_snapshots.py is:
a frozen clock, no watcher, no tick, TZ=UTC, a fixed home path; the ledger is read on its
worker and waited for before the screen is taken."""

from __future__ import annotations

import pytest

from store.dialects.readings import Reading
from tests.console.habits_helpers import seed_sidecar
from tests.console.spend_helpers import seed_ledger, spend_read, spent
from tests.tui_sample import NOW, make_app, table_of

pytestmark = pytest.mark.usefixtures("utc")

SIZES = [(80, 24), (200, 50)]
IDS = ["80x24", "200x50"]
CHOSEN = ("label", "status", "left", "spend", "error", "fingerprint")


def seed(home) -> None:
    seed_sidecar(home, {"a1b2c3": [Reading("5h", "anthropic-unified", NOW - 2, utilization=0.62,
                                            reset_at=NOW + 3600)]})
    seed_ledger(home, [
        spent("openrouter", "a1b2c3", 0.30, "actual", input=1000, cache_read=600, output=200, reasoning=40),
        spent("openrouter", "a1b2c3", 0.1213, "estimated"),
        spent("openrouter", "a1b2c3", 2.00, "actual", at=NOW - 3 * 86400),
        spent("openrouter", "0f0f0f", 0.0004, "estimated"),
        spent("anthropic", "aa11bb", None, "included"),
    ])


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_dashboard_spend(snap_compare, size, home_at) -> None:
    home = home_at(f"spend-{size[0]}")
    seed(home)
    app = make_app(home)

    async def show(pilot) -> None:
        await spend_read(app, pilot)
        if size[0] < 200:
            table_of(app).set_columns(CHOSEN)
        app.dashboard.spend.over_budget({("openrouter", "0f0f0f"): "$ over budget"})     # as a running proxy says
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=show)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_detail_usage(snap_compare, size, home_at) -> None:
    home = home_at(f"spend-detail-{size[0]}")
    seed(home)
    app = make_app(home)

    async def open_detail(pilot) -> None:
        await pilot.pause()
        table_of(app).move_to_key("cred\x1fopenrouter\x1fa1b2c3")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        if size[1] < 30:
            app.screen.query_one("#detail-body").scroll_to(y=4, animate=False)     # the usage lines
            await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_detail)


def seed_included(home) -> None:
    """The sample's Claude login (anthropic aa11bb) at 5h 42%, with no answer in the ledger
    today; an openrouter key's answer is the ledger's only line (#29)."""
    from store.agent.headroom import Headroom
    from store.pools.view import row_fingerprint
    from tests.tui_sample import write_sample

    row = write_sample(home)["credential_pool"]["anthropic"][0]
    room = Headroom(home, clock=lambda: NOW)
    room.record("anthropic", "aa11bb", row_fingerprint("anthropic", row),
                [Reading("5h", "anthropic-unified", NOW - 2, utilization=0.42, reset_at=NOW + 3600)])
    assert room.flush(force=True)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.30, "actual")])


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_dashboard_subscription_with_no_answer_today(snap_compare, size, home_at) -> None:
    home = home_at(f"spend-incl-{size[0]}")
    seed_included(home)
    app = make_app(home)

    async def show(pilot) -> None:
        await spend_read(app, pilot)
        if size[0] < 200:
            table_of(app).set_columns(CHOSEN)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=show)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_detail_subscription_with_no_answer_today(snap_compare, size, home_at) -> None:
    home = home_at(f"spend-incl-detail-{size[0]}")
    seed_included(home)
    app = make_app(home)

    async def open_detail(pilot) -> None:
        await pilot.pause()
        table_of(app).move_to_key("cred\x1fanthropic\x1faa11bb")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        if size[1] < 30:
            app.screen.query_one("#detail-body").scroll_to(y=8, animate=False)     # the usage lines
            await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_detail)
