"""Snapshots of help, config, the all-profiles view and the proxy panel at 80x24, 120x40 and
200x50: every screen right from a narrow SSH window to a wide one.

Deterministic as tests/console/test_snapshots.py: a frozen clock, no watcher, TZ=UTC, homes
at ``~/<name>`` under a per-run ``$HOME``; the proxy panel is fed one fixed status (no live
proxy, no pid or time of this run). Regenerate with
``pytest tests/console/test_snapshots_screens.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import pytest

from screens.proxy_view import ProxyScreen
from tests.profiles_sample import make_root as make_profiles
from tests.profiles_sample import root_app
from tests.tui_sample import config_home, make_app, proxy_status, ready, write_sample

pytestmark = pytest.mark.usefixtures("utc")
SIZES = [(80, 24), (120, 40), (200, 50)]
IDS = ["80x24", "120x40", "200x50"]


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
        await ready(pilot)

    assert snap_compare(make_app(home), terminal_size=size, run_before=open_help)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_config_fallback_chain(snap_compare, home_at, size) -> None:
    home = home_at("config")
    config_home(home)

    async def open_config(pilot) -> None:
        await pilot.pause()
        await pilot.press("v", "2")
        await pilot.pause()
        await ready(pilot)

    assert snap_compare(make_app(home), terminal_size=size, run_before=open_config)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_profiles(snap_compare, home_at, size) -> None:
    root = make_profiles(home_at("profiles").root)
    app = root_app(root)
    app.animation_level = "none"

    async def settle(pilot) -> None:
        await pilot.pause()
        await ready(pilot)

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
        await ready(pilot)

    assert snap_compare(app, terminal_size=size, run_before=open_panel)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_strategy_picker(snap_compare, home_at, size) -> None:
    """The picker (a guarded modal since issue 28: it takes no key of the burst that opened
    it), opened by a deliberate `s` and shown as the operator sees it."""
    home = home_at("picker")
    write_sample(home)
    home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n")
    app = make_app(home)

    async def pick(pilot) -> None:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        await ready(pilot)

    assert snap_compare(app, terminal_size=size, run_before=pick)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_proxy_route_chooser(snap_compare, home_at, size) -> None:
    """The proxy's route chooser (`p` in the panel; guarded since issue 28)."""
    home = home_at("route")
    write_sample(home)
    app = make_app(home)

    async def choose(pilot) -> None:
        await pilot.pause()
        app.push_screen(FixedProxyScreen(app.home))
        await pilot.pause()
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        await ready(pilot)

    assert snap_compare(app, terminal_size=size, run_before=choose)
