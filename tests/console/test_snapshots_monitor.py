"""Snapshots of the monitor view (``A``) at 80x24 and 200x50, and of its "no monitor" state.

Deterministic as tests/console/test_snapshots_screens.py: a frozen clock, no watcher, TZ=UTC,
homes at ``~/<name>`` under a per-run ``$HOME``; the view is fed one fixed status (no live
monitor, no pid of this run). Regenerate with
``pytest tests/console/test_snapshots_monitor.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from typing import Any

import pytest

from screens.monitor_view import MonitorScreen
from store.paths import Home
from tests.console.monitor_view_helpers import NOON, monitor_status
from tests.tui_sample import write_sample
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock

pytestmark = pytest.mark.usefixtures("utc")


class FixedMonitorScreen(MonitorScreen):
    """The view on one fixed status (or none) instead of the live file."""

    fixed: dict[str, Any] | None = None

    def poll(self) -> None:
        self.show(self.fixed)


def app_on(home: Home) -> HermesAdminApp:
    app = HermesAdminApp(home, clock=FakeClock(NOON), watch=False, tick=False)
    app.animation_level = "none"
    return app


def opener(app: HermesAdminApp, home: Home, fixed: dict[str, Any] | None) -> Any:
    async def open_view(pilot) -> None:
        await pilot.pause()
        screen = FixedMonitorScreen(home, start_hint="hermes-admin --home ~/monitor monitor")
        screen.fixed = fixed
        app.push_screen(screen)
        await pilot.pause()
        await pilot.pause()
    return open_view


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_monitor_view(snap_compare, home_at, size) -> None:
    home = home_at("monitor")
    write_sample(home)
    app = app_on(home)
    assert snap_compare(app, terminal_size=size, run_before=opener(app, home, monitor_status(home, pid=4242)))


def test_monitor_view_with_no_monitor(snap_compare, home_at) -> None:
    home = home_at("monitor")
    write_sample(home)
    app = app_on(home)
    assert snap_compare(app, terminal_size=(80, 24), run_before=opener(app, home, None))
