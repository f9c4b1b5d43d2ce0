"""The monitor view (``A``) and the status bar's monitor words, from status files written with
the monitor's own writer (``store.monitor.status.write``).

A live monitor is this test process's pid; a stale one is a pid that has exited, or a file
saying ``stopped``. Hostile files (every field any JSON value, lists of non-objects, NaN and
ints past any float) never crash the view; a canary key planted in an alert's title and text
is never on screen, and the negative control (a view without ``shown``) shows it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.widgets import DataTable

from screens.monitor_view import POLL_SECONDS, MonitorScreen
from screens.status_watch import MONITOR_FIND_SECONDS
from store.monitor import STATUS_FILE
from store.monitor import status as monitor_status_file
from store.paths import Home
from tests.conftest import make_row, make_store, write_store
from tests.console.monitor_view_helpers import NOON, SIZE, gone_pid, monitor_status, screen_text
from tests.profiles_sample import make_root, root_app
from tests.tui_sample import CANARY, app_for, write_sample
from tui.app.console import HermesAdminApp
from tui.services import monitor_feed as feed
from tui.services.clock import FakeClock
from tui.widgets import StatusBar
from tui.widgets.status import fit_parts

pytestmark = pytest.mark.usefixtures("utc")
EXAMPLES = max(6, int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300")) // 30)


def cells(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def view_of(app: HermesAdminApp) -> MonitorScreen:
    assert isinstance(app.screen, MonitorScreen)
    return app.screen


def bar(app: HermesAdminApp) -> str:
    return app.dashboard.query_one(StatusBar).text


@pytest.fixture
def home(tmp_home: Home) -> Home:
    write_sample(tmp_home)
    return tmp_home


async def test_the_view_lists_open_alerts_and_deliveries(home: Home) -> None:
    monitor_status_file.write(home, monitor_status(home))
    app = app_for(home, clock=FakeClock(NOON))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "monitor · 2 alerts, 1 critical (A)" in bar(app)
        await pilot.press("A")
        await pilot.pause()
        view = view_of(app)
        alerts = view.query_one("#monitor-alerts", DataTable)
        assert app.focused is alerts
        # Most severe first; severity in words (and a symbol), never colour alone.
        assert cells(alerts) == [
            ["✖ critical", "pool_empty", "default", "openrouter", "—", "11:55:00", "openrouter: no usable key", "—"],
            ["⚠ warning", "key_dead", "default", "anthropic", "d3ad00 old-key", "11:45:00",
             "anthropic: key old-key went dead", "sk-ant…ab12"],
        ]
        deliveries = cells(view.query_one("#monitor-deliveries", DataTable))
        assert deliveries == [      # newest first
            ["11:58:00", "long_cooldown", "recovery", "✓ sent", "1", "", "json://localhost:8099/hook"],
            ["11:55:01", "pool_empty", "alert", "✗ failed", "4", "connection refused", "slack://T...2/A...D/T...Q"],
            ["11:55:00", "pool_empty", "alert", "✓ sent", "1", "", "json://localhost:8099/hook"],
        ]
        header = str(view.query_one("#monitor-header").render())
        assert header.startswith("Monitor on home ") and "running since 11:00:00" in header
        assert f"pid {os.getpid()}" in header
        assert str(view.query_one("#monitor-metrics").render()) == "metrics: http://127.0.0.1:9464/metrics"
        assert str(view.query_one("#monitor-rules").render()).endswith("/hermes-admin-monitor.yaml")
        assert str(view.query_one("#monitor-targets").render()) == \
            "targets: json://localhost:8099/hook, slack://T...2/A...D/T...Q"
        assert str(view.query_one("#monitor-alert-text").render()) == \
            "openrouter: no usable key: every key of openrouter is cooling"
        await pilot.press("down")
        await pilot.pause()
        assert "is dead: 401 invalid key" in str(view.query_one("#monitor-alert-text").render())
        # The monitor closes an alert: the next poll shows it.
        st = monitor_status(home)
        st["open_alerts"] = st["open_alerts"][:1]
        monitor_status_file.write(home, st)
        before = {p.name: p.stat().st_mtime_ns for p in home.root.iterdir()}
        view.poll()
        await pilot.pause()
        assert len(cells(alerts)) == 1
        await pilot.press("A")
        await pilot.pause()
        assert app.screen is app.dashboard
    # Read-only: since the last write above, the view and the status bar wrote nothing there.
    assert {p.name: p.stat().st_mtime_ns for p in home.root.iterdir()} == before


async def test_no_monitor_the_view_says_how_to_start_one(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home.root.parent))
    app = app_for(home, clock=FakeClock(NOON))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "monitor ·" not in bar(app)
        await pilot.press("A")
        await pilot.pause()
        view = view_of(app)
        none = str(view.query_one("#monitor-none").render())
        assert "No monitor is running on ~/hermes-home." in none
        assert f"Start one with: hermes-admin --home ~/{home.root.name} monitor" in none
        assert not view.query_one("#monitor-alerts").display
        # It starts while the view is open: the next poll fills it in.
        monitor_status_file.write(home, monitor_status(home, open_alerts=[], last_deliveries=[]))
        view.poll()
        await pilot.pause()
        assert not view.query_one("#monitor-none").display
        assert str(view.query_one("#monitor-alerts-title").render()) == "Open alerts: none, all quiet"
        assert str(view.query_one("#monitor-deliveries-title").render()) == "Last deliveries: none yet"
        await pilot.press("escape")
        await pilot.pause()
        app.dashboard.monitor.poll()
        await pilot.pause()
        assert "monitor · quiet (A)" in bar(app)


@pytest.mark.parametrize("stale", ["pid gone", "stopped", "not a monitor's"])
async def test_a_stale_status_file_shows_no_monitor(home: Home, stale: str) -> None:
    over: dict[str, Any] = {"pid gone": {"pid": gone_pid()}, "stopped": {"state": "stopped"},
                            "not a monitor's": {"version": 99}}[stale]
    monitor_status_file.write(home, monitor_status(home, **over))
    app = app_for(home, clock=FakeClock(NOON))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "monitor" not in bar(app)
        await pilot.press("A")
        await pilot.pause()
        assert view_of(app).query_one("#monitor-none").display
        # A live monitor on the same home: the words come on the next look.
        await pilot.press("escape")
        monitor_status_file.write(home, monitor_status(home))
        app.dashboard.monitor.poll()
        await pilot.pause()
        assert "monitor · 2 alerts" in bar(app)
        # Its pid goes: the words go too, with no write of the file.
        monitor_status_file.write(home, monitor_status(home, pid=gone_pid()))
        app.dashboard.monitor.poll()
        await pilot.pause()
        assert "monitor" not in bar(app)


async def test_the_status_bar_looks_every_few_seconds_and_the_view_each_second(home: Home) -> None:
    app = HermesAdminApp(home, clock=FakeClock(NOON), watch=False)   # ticking, as run
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        timer = app.dashboard.monitor.timer
        assert timer is not None and timer._interval == MONITOR_FIND_SECONDS >= 5 * POLL_SECONDS
        await pilot.press("A")
        await pilot.pause()
        polls = [t for t in view_of(app)._timers if t.name == "monitor-poll"]
        assert [t._interval for t in polls] == [POLL_SECONDS] and POLL_SECONDS >= 1.0


async def test_the_root_console_follows_the_roots_own_home(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    root = make_root(tmp_path)
    base = Home(root.path)
    app = root_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("A")
        await pilot.pause()
        none = str(view_of(app).query_one("#monitor-none").render())
        assert "Start one with: hermes-admin monitor --root ~/hermes" in none
        await pilot.press("escape")
        monitor_status_file.write(base, monitor_status(base, mode="root"))
        app.dashboard.monitor.poll()
        await pilot.pause()
        # It fits 80 columns beside the acting profile, which is never the part cut.
        text = bar(app)
        assert "monitor · 2 alerts" in text and "acting: default" in text and len(text) <= 80
        await pilot.press("A")
        await pilot.pause()
        assert str(view_of(app).query_one("#monitor-header").render()).startswith("Monitor on root ~/hermes ")


async def test_the_status_bar_at_80_columns_gives_way_least_important_first(home: Home) -> None:
    mon = feed.summary(monitor_status(home))
    assert mon == ("monitor · 2 alerts, 1 critical", "monitor · 2 alerts")
    proxy = "proxy :8645 · 13 req/min · ▶ fallback nous"
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        sb = app.dashboard.query_one(StatusBar)

        def line(monitor: tuple[str, str], width: int = 80) -> str:
            sb.set_parts(home="/srv/hermes/profiles/team-a", live="● LIVE", read_only=True, stale=False,
                         sort="priority ↑", filter_text="cooling", generation=12, updated="00:00:00",
                         proxy=proxy, monitor=monitor)
            return sb.text if width == 80 else fit_parts(sb.parts, width).plain

        crowded = line(mon)
        # Home, details and the proxy went, the monitor took its short form; what matters stays.
        assert len(crowded) <= 80 and "READ-ONLY" in crowded and "filter “cooling”" in crowded
        assert "monitor · 2 alerts (A)" in crowded and "critical" not in crowded and "proxy" not in crowded
        roomy = line(mon, 200)
        assert "monitor · 2 alerts, 1 critical (A) · proxy :8645" in roomy
        # With no monitor the line is what it was before the monitor had a part: the same cells.
        without = line(("", ""))
        assert without == fit_parts([p for p in sb.parts if not p[0].startswith("monitor")], 80).plain
        assert "monitor" not in without


def test_summary_words() -> None:
    h = Home(Path("/x"))
    assert feed.summary(None) == ("", "")
    assert feed.summary(monitor_status(h, open_alerts=[])) == ("monitor · quiet", "")
    one = monitor_status(h)["open_alerts"][:1]
    assert feed.summary(monitor_status(h, open_alerts=one)) == ("monitor · 1 alert", "monitor · 1 alert")
    assert feed.summary(monitor_status(h, open_alerts="many")) == ("monitor · alerts unreadable", "monitor · ⚠")


# ------------------------------------------------------------ hostile files and the canary

JSON = st.recursive(st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=40),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)
ALERT_KEYS = ("key", "rule", "severity", "profile", "pool", "id", "label", "fingerprint", "title", "text", "since")
DELIVERY_KEYS = ("time", "key", "rule", "kind", "target", "result", "attempts", "error")
TOP_KEYS = ("started_at", "updated_at", "mode", "path", "metrics", "rules", "targets")


def entry(keys: tuple[str, ...]) -> st.SearchStrategy:
    return st.one_of(JSON, st.fixed_dictionaries({}, optional={k: JSON for k in keys}))


HOSTILE = st.fixed_dictionaries(
    {}, optional={**{k: JSON for k in TOP_KEYS},
                  "open_alerts": st.one_of(JSON, st.lists(entry(ALERT_KEYS), max_size=4)),
                  "last_deliveries": st.one_of(JSON, st.lists(entry(DELIVERY_KEYS), max_size=4))})


@settings(max_examples=300, deadline=None)
@given(doc=HOSTILE)
def test_any_status_the_feed_never_raises(doc: dict[str, Any]) -> None:
    st_ = {"version": 1, "state": "running", "pid": os.getpid(), **doc}
    assert isinstance(feed.summary(st_)[0], str)
    for line in (feed.header_line(st_, NOON), feed.metrics_line(st_), feed.rules_line(st_), feed.targets_line(st_)):
        assert isinstance(line, str)
    for a in feed.open_alerts(st_):
        row = feed.alert_row(a, NOON)
        assert len(row) == len(feed.ALERT_COLUMNS) and all(isinstance(c, str) for c in row)
        assert isinstance(feed.alert_line(a), str)
    for row in feed.delivery_rows(st_):
        assert len(row) == len(feed.DELIVERY_COLUMNS) and all(isinstance(c, str) for c in row)
    assert all(isinstance(e, str) for e in feed.data_errors(st_))


def plant(home: Home, doc: dict[str, Any]) -> None:
    """A hostile status file, written raw: NaN and Infinity as json.dumps writes them."""
    data = {"version": 1, "state": "running", "pid": os.getpid(), **doc}
    path = home.root / STATUS_FILE
    path.write_text(json.dumps(data, allow_nan=True))
    path.chmod(0o600)


def canary_home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("home")
    root.chmod(0o700)
    h = Home(root)
    write_store(h, make_store({"openrouter": [make_row("a1b2c3", label="primary", token=CANARY)]}))
    return h


async def opened(home: Home, size: tuple[int, int] = (200, 50)) -> tuple[str, str]:
    app = app_for(home, clock=FakeClock(NOON))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        status_bar = bar(app)
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, MonitorScreen)
        return status_bar, screen_text(app)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=HOSTILE)
def test_any_status_file_the_view_shows_without_a_crash_or_a_key(tmp_path_factory, doc: dict[str, Any]) -> None:
    import asyncio

    h = canary_home(tmp_path_factory)
    alerts = doc.get("open_alerts")
    if isinstance(alerts, list):     # and the canary, in the fields the view shows
        alerts.append({"severity": "critical", "title": f"leak {CANARY}", "text": f"said {CANARY}", "since": 1e400})
    plant(h, doc)
    status_bar, text = asyncio.run(opened(h))
    assert CANARY not in text and CANARY not in status_bar
    assert "\x1b" not in text


def leaky(home: Home) -> None:
    st_ = monitor_status(home)
    st_["open_alerts"][1]["title"] = f"openrouter: {CANARY}"
    st_["open_alerts"][1]["text"] = f"the provider echoed {CANARY}\x1b]2;PWNED\x07"
    st_["last_deliveries"][0]["error"] = f"refused {CANARY}"
    monitor_status_file.write(home, st_)


async def test_a_canary_in_the_file_is_never_on_screen(tmp_path_factory) -> None:
    h = canary_home(tmp_path_factory)
    leaky(h)
    _bar, text = await opened(h)
    assert "openrouter: sk-or-" in text        # the title is there, the key as a fingerprint
    assert CANARY not in text and "PWNED\x07" not in text and "\x1b]" not in text


async def test_negative_control_a_view_without_shown_shows_the_canary(tmp_path_factory,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    h = canary_home(tmp_path_factory)
    leaky(h)
    monkeypatch.setattr("screens.monitor_view.shown", lambda value: str(value))
    _bar, text = await opened(h)
    assert CANARY in text
