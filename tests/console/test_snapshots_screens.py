"""Snapshots of help, config, the all-profiles view and the proxy panel at 80x24, 120x40 and
200x50: every screen right from a narrow SSH window to a wide one.

Deterministic as tests/console/test_snapshots.py: a frozen clock, no watcher, TZ=UTC, homes
at ``~/<name>`` under a per-run ``$HOME``; the proxy panel is fed one fixed status (no live
proxy, no pid or time of this run). Regenerate with
``pytest tests/console/test_snapshots_screens.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from typing import Any

import pytest

from screens.proxy_view import ProxyScreen
from store.proxy.stats import BUCKETS
from tests.profiles_sample import make_root as make_profiles
from tests.profiles_sample import root_app
from tests.tui_sample import NOW, config_home, make_app, write_sample

pytestmark = pytest.mark.usefixtures("utc")
SIZES = [(80, 24), (120, 40), (200, 50)]
IDS = ["80x24", "120x40", "200x50"]


def proxy_status() -> dict[str, Any]:
    """A proxy on fallback, as its status file would say, at fixed times and pid."""
    return {
        "pid": 4242, "host": "127.0.0.1", "port": 8645, "url": "http://127.0.0.1:8645/v1",
        "state": "running", "started_at": NOW - 3600, "updated_at": NOW, "primary": "openrouter",
        "active": "nous", "on_fallback_since": NOW - 600, "next_restore_check": NOW + 120,
        "chain": [{"name": "openrouter", "pool": "openrouter", "model": None, "active": False, "rows": 3,
                   "usable": 0, "cooling": 2, "dead": 1},
                  {"name": "nous", "pool": "nous", "model": "hermes-4", "active": True, "rows": 1,
                   "usable": 1, "cooling": 0, "dead": 0}],
        "in_flight": 2, "pending_counts": 0, "inbound_auth": True,
        "credentials": [{"pool": "nous", "id": "ns0aaa", "label": "nous-main", "in_flight": 2,
                         "requests_per_minute": 9},
                        {"pool": "openrouter", "id": "a1b2c3", "label": "primary", "in_flight": 0,
                         "requests_per_minute": 4}],
        "pools": {"nous": {"bucket_seconds": 10, "requests": [i % 5 for i in range(BUCKETS)],
                           "rate_limited": [0] * BUCKETS},
                  "openrouter": {"bucket_seconds": 10, "requests": [(i * 7) % 9 for i in range(BUCKETS)],
                                 "rate_limited": [1 if i % 11 == 0 else 0 for i in range(BUCKETS)]}},
        "requests_total": 1234, "errors_total": 5, "stream_failures": 0,
    }


class FixedProxyScreen(ProxyScreen):
    """The panel on one fixed status instead of the live file."""

    def poll(self) -> None:
        self.show(proxy_status())


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_help(snap_compare, home_at, size) -> None:
    home = home_at("help")
    write_sample(home)

    async def open_help(pilot) -> None:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(make_app(home), terminal_size=size, run_before=open_help)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_config_fallback_chain(snap_compare, home_at, size) -> None:
    home = home_at("config")
    config_home(home)

    async def open_config(pilot) -> None:
        await pilot.pause()
        await pilot.press("v", "2")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(make_app(home), terminal_size=size, run_before=open_config)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_profiles(snap_compare, home_at, size) -> None:
    root = make_profiles(home_at("profiles").root)
    app = root_app(root)
    app.animation_level = "none"

    async def settle(pilot) -> None:
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_proxy_panel(snap_compare, home_at, size) -> None:
    home = home_at("proxy")
    write_sample(home)
    app = make_app(home)

    async def open_panel(pilot) -> None:
        await pilot.pause()
        app.push_screen(FixedProxyScreen(app.home))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_panel)
