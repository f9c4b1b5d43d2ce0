"""The proxy panel (``x``) and the dashboard's one-line proxy summary, from status files.

One test drives a real proxy in this process (fallback after a 429 storm) and opens the
panel on the status file it wrote; the others write status files with the proxy's own
writer (``store.proxy.observing.stats.write_status``) to pin a stale file and the secret canary.
The canary's control shows the check finds a key when one is on screen.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest
from textual.widgets import DataTable, Sparkline

from screens.proxy_view import POLL_SECONDS, PoolSparks, ProxyScreen
from screens.status_watch import PROXY_FIND_SECONDS
from store.paths import Home
from store.proxy import CLIENT_KEYS_FILE
from store.proxy.observing.stats import write_status
from tests.console.proxy_panel_helpers import CLIENT_KEY, SIZE, cells, panel_of, screen_text, status
from tests.proxy_helpers import NOUS_KEY, OR_KEYS, running_proxy, seed
from tests.tui_sample import NOW, app_for, notes
from tui.app.console import HermesAdminApp
from tui.demo.fake_provider import FakeProvider, rate_limited
from tui.services import proxy_feed
from tui.services.clock import FakeClock
from tui.widgets import StatusBar


@pytest.fixture
def seeded(tmp_home: Home) -> Home:
    with FakeProvider() as fake:     # only for the rows' base_url; the panel never calls it
        seed(tmp_home, fake)
    (tmp_home.root / CLIENT_KEYS_FILE).write_text(CLIENT_KEY + "\n")
    os.chmod(tmp_home.root / CLIENT_KEYS_FILE, 0o600)
    return tmp_home


async def test_panel_shows_a_real_proxy_on_fallback(tmp_home: Home) -> None:
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        for k in OR_KEYS:
            fake.script(k, rate_limited(retry_after=600))
        with running_proxy(tmp_home) as p:
            for _ in range(3):
                r = httpx.post(p.url + "/chat/completions", timeout=20,
                               headers={"Authorization": f"Bearer {CLIENT_KEY}"},
                               json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
                assert r.status_code == 200 and r.headers["x-hermes-pool"] == "nous"
            p.settled()         # the last answer's bookkeeping runs after its bytes
            p.server._write_status()
            st = proxy_feed.live_status(tmp_home)
            assert st is not None and st["requests_total"] > 0 and st["active"] == "nous"
            app = app_for(tmp_home)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.pause()
                bar = app.dashboard.query_one(StatusBar).text
                assert f"proxy :{p.server.port} · " in bar and "▶ fallback nous" in bar
                await pilot.press("x")
                await pilot.pause()
                panel = panel_of(app)
                table = panel.query_one("#proxy-creds", DataTable)
                assert app.focused is table
                rows = {(r[0], r[1]): r for r in cells(table)}
                assert rows[("nous", "ns0aaa")][4] == "3"            # 3 requests in the last minute
                assert rows[("openrouter", "or0aaa")][4] != "—"
                chain = str(panel.query_one("#proxy-chain").render())
                assert chain.startswith("▶ on fallback nous since ") and "next restore check" in chain
                sparks = {(s.pool, s.kind): s for s in panel.query(PoolSparks)}
                assert sum(sparks[("nous", "requests")].query_one(Sparkline).data) == 3
                assert sum(sparks[("openrouter", "rate_limited")].query_one(Sparkline).data) >= 3
                text = screen_text(app)
                assert all(k not in text for k in [*OR_KEYS, NOUS_KEY, CLIENT_KEY])
        # The proxy stopped (final status "stopped"): the panel says so and shows no figures.
        async with app_for(tmp_home).run_test(size=SIZE) as pilot:
            app = pilot.app
            await pilot.press("x")
            await pilot.pause()
            assert not isinstance(app.screen, ProxyScreen)
            assert "proxy :" not in app.dashboard.query_one(StatusBar).text


async def test_panel_figures_from_the_writer_at_80x24(seeded: Home) -> None:
    write_status(seeded, status())
    app = app_for(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        table = panel.query_one("#proxy-creds", DataTable)
        assert app.focused is table
        assert cells(table) == [["nous", "ns0aaa", "key-ns0aaa", "2", "9", "—", "—"],
                                ["openrouter", "or0aaa", "—", "0", "4", "—", "—"]]     # no pins, no budget
        sparks = {(s.pool, s.kind): s for s in panel.query(PoolSparks)}
        assert sparks[("openrouter", "requests")].query_one(Sparkline).data[-3:] == [4, 7, 2]
        assert sparks[("openrouter", "rate_limited")].query_one(Sparkline).data[-3:] == [0, 3, 1]
        assert str(panel.query_one("#proxy-chain").render()).startswith("▶ on fallback nous since ")
        # The figures in words beside the bars, and every line visible at 80x24.
        labels = {k: str(s.label.render()) for k, s in sparks.items()}
        assert "requests   13/10m" in labels[("openrouter", "requests")]
        assert "429s    4/10m" in labels[("openrouter", "rate_limited")]
        assert all(s.region.height == 1 and s.spark.region.width > 20 for s in sparks.values())
        assert all(k not in screen_text(app) for k in [*OR_KEYS, NOUS_KEY, CLIENT_KEY])
        # The proxy comes back to its primary: the next poll says so.
        write_status(seeded, status(active="openrouter", on_fallback_since=None, next_restore_check=None))
        panel.poll()
        await pilot.pause()
        assert str(panel.query_one("#proxy-chain").render()) == "● on primary openrouter"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard


async def test_canary_control_a_key_on_screen_is_found(seeded: Home) -> None:
    """Control: were a key to reach the panel (here as a label), the canary check sees it."""
    st = status()
    st["credentials"][0]["label"] = CLIENT_KEY
    write_status(seeded, st)
    app = app_for(seeded)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        assert CLIENT_KEY in screen_text(app)


async def test_a_stale_status_file_shows_no_proxy(seeded: Home) -> None:
    write_status(seeded, status(updated_at=time.time() - 60))
    app = app_for(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "proxy :" not in app.dashboard.query_one(StatusBar).text
        await pilot.press("x")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any("No proxy is running" in n for n in notes(app))
        # It comes alive: the summary appears on the next poll, and the panel opens.
        write_status(seeded, status())
        app.dashboard.proxy.poll()
        await pilot.pause()
        assert "proxy :8645 · 13 req/min · ▶ fallback nous (x)" in app.dashboard.query_one(StatusBar).text
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        # It goes stale while open: the figures go, the words say why.
        write_status(seeded, status(updated_at=time.time() - 60))
        panel.poll()
        await pilot.pause()
        assert not panel.query_one("#proxy-creds").display
        assert not panel.query_one("#proxy-sparks").display
        none = panel.query_one("#proxy-none")
        assert none.display and "No proxy is running" in str(none.render())


def test_a_dead_pid_is_not_live(seeded: Home) -> None:
    """A fresh file whose writer is gone (pid not running) is not a live proxy either."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    write_status(seeded, status(pid=int(gone.stdout)))
    assert proxy_feed.live_status(seeded) is None
    write_status(seeded, status())
    assert proxy_feed.live_status(seeded) is not None


def test_summary_and_nulls() -> None:
    assert proxy_feed.summary(None) == ""
    st = status(active="openrouter")
    assert proxy_feed.summary(st) == "proxy :8645 · 13 req/min · primary"
    assert proxy_feed.chain_line(status(on_fallback_since=None, next_restore_check=None)) == \
        "▶ on fallback nous since — · next restore check —"


async def test_the_dashboard_looks_for_a_proxy_slowly_and_follows_a_live_one_each_second(
        seeded: Home) -> None:
    app = HermesAdminApp(seeded, clock=FakeClock(NOW), watch=False)   # ticking, as run
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        dash = app.dashboard
        # No proxy: one look every few seconds, so an idle console stays idle.
        assert dash.proxy.pace == PROXY_FIND_SECONDS > POLL_SECONDS
        first = dash.proxy.timer
        write_status(seeded, status())
        dash.proxy.poll()
        await pilot.pause()
        # Found: followed each second (the proxy rewrites its file each second).
        assert dash.proxy.pace == POLL_SECONDS and dash.proxy.timer is not first
        write_status(seeded, status(updated_at=time.time() - 60))
        dash.proxy.poll()
        await pilot.pause()
        assert dash.proxy.pace == PROXY_FIND_SECONDS
        assert "proxy :" not in dash.query_one(StatusBar).text
