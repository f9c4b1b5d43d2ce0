"""The proxy panel's last 50 requests, its circuit breakers, and r / p / u steering a real proxy.

- A real proxy in this process, on its fallback after a 429 storm: the panel lists the
  requests it served (newest first: route, credential, status, outcome), ``p`` → nous → ``y``
  pins it, ``u`` → ``y`` unpins, ``r`` → ``y`` brings it back to the primary; each answer
  shows on the feedback line, and each is audited with ``via: console``. No key on screen.
- Negative controls: ``n`` at the confirmation sends nothing (no control file, no audit
  line, the proxy stays where it was); read-only dims the keys and sends nothing; a live
  status whose proxy never answers ends in a said error (bounded), never a hang.
- From status files: 50 request lines with a canary nowhere, the breakers in words
  (including an absurd ``open_until``), and the canary control (a key planted in a request
  line's route is found by the same check).
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import pytest
from textual.widgets import DataTable

from screens.confirm import ConfirmScreen
from screens.proxy_view import ProxyScreen, RouteScreen
from store.ops import audit
from store.paths import Home
from store.proxy import CLIENT_KEYS_FILE
from store.proxy.observing.stats import write_status
from tests.console.proxy_panel_helpers import CLIENT_KEY, SIZE, cells, panel_of, screen_text, status
from tests.proxy_helpers import NOUS_KEY, OR_KEYS, running_proxy, seed
from tests.tui_sample import app_for
from tui.app.console import HermesAdminApp
from tui.demo.fake_provider import FakeProvider, rate_limited
from tui.services import proxy_feed
from tui.text.format import BAD_TIME

MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
KEYS = [*OR_KEYS, NOUS_KEY, CLIENT_KEY]


def proxy_actions(home: Home) -> list[tuple[str, str]]:
    return [(e["action"], e["via"]) for e in audit.tail(home) if str(e.get("action")).startswith("proxy-")]


def control_files(home: Home) -> list[str]:
    return [p.name for p in home.root.iterdir() if ".control-" in p.name]


async def until(pilot: Any, pred: Any, what: str, timeout: float = 20.0) -> None:
    """Bounded: pause the app until *pred* holds, or fail naming *what*."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(0.05)


async def steer(pilot: Any, app: HermesAdminApp, key: str, *, route: str | None = None,
                answer: str = "y") -> None:
    await pilot.press(key)
    if route is not None:
        # On screen (mounted): the chooser, too, answers only to keys pressed after that.
        await until(pilot, lambda: isinstance(app.screen, RouteScreen) and app.screen.shown_at is not None,
                    "the route chooser")
        options = [o.id for o in app.screen.query_one("#proxy-pin-options").options]
        await pilot.press(*(["down"] * options.index(route)), "enter")
    # On screen (mounted), not only pushed: it answers only to keys pressed after that.
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.shown_at is not None,
                "the confirmation")
    await pilot.press(answer)
    await until(pilot, lambda: isinstance(app.screen, ProxyScreen), "the panel again")


def served_by(url: str) -> str:
    r = httpx.post(url + "/chat/completions", json=MSG, timeout=30, headers={"Authorization": "Bearer x"})
    assert r.status_code == 200, r.text
    return r.headers["x-hermes-pool"]


@pytest.mark.slow
async def test_the_panel_steers_a_real_proxy_and_lists_its_requests(tmp_home: Home) -> None:
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        for k in OR_KEYS:
            fake.script(k, rate_limited(retry_after=600))
        with running_proxy(tmp_home) as p:
            assert served_by(p.url) == "nous" and served_by(p.url) == "nous"
            p.settled()         # the second request's log line is written after its bytes
            p.server._write_status()
            app = app_for(tmp_home)
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("x")
                await pilot.pause()
                panel = panel_of(app)
                log = panel.query_one("#proxy-requests", DataTable)
                rows = cells(log)
                assert len(rows) == 2 and all(r[1] == "nous" and r[2] == "nous/ns0aaa" and r[3] == "200"
                                              and r[6] == "fallback" for r in rows), rows
                assert "unpin" not in str(panel.query_one("#proxy-chain").render())
                # Negative control: n at the confirmation sends nothing.
                await steer(pilot, app, "p", route="nous", answer="n")
                assert control_files(tmp_home) == [] and p.chain.steer.pin is None
                assert proxy_actions(tmp_home) == []
                # p, nous, y: pinned.
                await steer(pilot, app, "p", route="nous")
                await until(pilot, lambda: panel.asking is None, "the proxy's answer to pin")
                assert panel.feedback.startswith("✓ proxy :") and "pinned to nous" in panel.feedback
                assert p.chain.steer.pin == "nous"
                assert str(panel.query_one("#proxy-chain").render()).startswith("▶ pinned to nous")
                # u, y: unpinned.
                await steer(pilot, app, "u")
                await until(pilot, lambda: panel.asking is None, "the proxy's answer to unpin")
                assert "unpinned from nous" in panel.feedback and p.chain.steer.pin is None
                # r, y: back on the primary (its keys still cooling: the answer says so).
                await steer(pilot, app, "r")
                await until(pilot, lambda: panel.asking is None, "the proxy's answer to restore")
                assert "back on primary openrouter" in panel.feedback, panel.feedback
                assert p.chain.runtime.on_primary
                await until(pilot, lambda: "● on primary" in str(panel.query_one("#proxy-chain").render()),
                            "the panel to show the primary")
                assert panel.check_action("restore", ()) is None      # dimmed: nothing to restore
                assert all(k not in screen_text(app) for k in KEYS)
            assert proxy_actions(tmp_home) == [("proxy-pin", "console"), ("proxy-unpin", "console"),
                                               ("proxy-restore", "console")]
            assert control_files(tmp_home) == []


@pytest.fixture
def seeded(tmp_home: Home) -> Home:
    with FakeProvider() as fake:     # only for the rows' base_url; nothing calls it
        seed(tmp_home, fake)
    (tmp_home.root / CLIENT_KEYS_FILE).write_text(CLIENT_KEY + "\n")
    os.chmod(tmp_home.root / CLIENT_KEYS_FILE, 0o600)
    return tmp_home


def recent(n: int, **over: Any) -> list[dict[str, Any]]:
    now = time.time()
    lines = [{"at": now - n + i, "rid": f"abc123-{i}", "path": "/v1/chat/completions", "route": "nous",
              "pool": "nous", "id": "ns0aaa", "status": 200, "ms": 12.5 + i, "upstream_ms": 11.0,
              "tries": 1, "outcome": "fallback"} for i in range(n)]
    lines[-1].update(over)
    return lines


def failing_upstreams() -> list[dict[str, Any]]:
    now = time.time()
    return [{"upstream": "https://api.example.test", "state": "open", "open_until": now + 42,
             "times_opened": 1, "strikes": 3, "down_since": now - 30, "last_error": "connect refused"},
            {"upstream": "https://slow.example.test", "state": "open", "open_until": 1e308, "strikes": 9,
             "down_since": 1e300, "last_error": "timeout"}]


async def test_fifty_requests_and_the_breakers_from_the_status_file(seeded: Home) -> None:
    write_status(seeded, status(recent_requests=recent(50, status=429, outcome="passed_on", route="openrouter",
                                                       pool="openrouter", id="or0aaa", ms=3.25, upstream_ms=None),
                                upstreams=failing_upstreams(), pinned=None))
    app = app_for(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        rows = cells(panel.query_one("#proxy-requests", DataTable))
        assert len(rows) == 50
        assert rows[0][1:] == ["openrouter", "openrouter/or0aaa", "429", "3.2", "—", "passed_on"]   # newest first
        assert rows[1][1:] == ["nous", "nous/ns0aaa", "200", "60.5", "11.0", "fallback"]
        breakers = str(panel.query_one("#proxy-breakers").render())
        assert "upstream https://api.example.test: circuit open, tried again in 4" in breakers
        assert "connect refused; no key benched" in breakers
        assert ("upstream https://slow.example.test: circuit open, retry time not a sane time; failing since "
                f"{BAD_TIME}, last: timeout") in breakers
        # Every part still on the screen at 80x24: the sparklines and some request lines.
        assert panel.query_one("#proxy-requests").region.height >= 3
        assert all(s.region.height == 1 for s in panel.query("PoolSparks"))
        assert all(k not in screen_text(app) for k in KEYS)


async def test_canary_control_a_key_in_a_request_line_is_found(seeded: Home) -> None:
    write_status(seeded, status(recent_requests=recent(3, route=CLIENT_KEY)))
    app = app_for(seeded)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.press("x")
        await pilot.pause()
        assert CLIENT_KEY in screen_text(app)


async def test_read_only_dims_the_steering_keys_and_sends_nothing(seeded: Home) -> None:
    write_status(seeded, status())
    app = app_for(seeded, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        for action in ("restore", "pin", "unpin"):
            assert panel.check_action(action, ()) is None
        await pilot.press("r", "p", "u")
        await pilot.pause()
        assert isinstance(app.screen, ProxyScreen)
        assert any("read-only" in "\n".join(m.lines) for m in app.messages)     # on the panel's flash line
        assert control_files(seeded) == []


async def test_a_proxy_that_never_answers_is_said_not_waited_on(seeded: Home) -> None:
    """A live status (this test's pid) with no proxy taking requests: the bounded wait ends in
    an error on the feedback line, the request file is taken back, nothing is audited."""
    write_status(seeded, status())
    app = app_for(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        panel.answer_wait = 0.3
        await steer(pilot, app, "r")
        await until(pilot, lambda: panel.asking is None, "the bounded wait to end")
        assert panel.feedback.startswith("✗ proxy :8645: the proxy on :8645 did not answer")
        assert "nothing was changed" in panel.feedback
        assert control_files(seeded) == [] and proxy_actions(seeded) == []
        assert panel.check_action("restore", ()) is True      # it may be asked again


def test_feed_rows_for_hostile_values() -> None:
    st = status(recent_requests=[{"at": 1e300, "ms": float("nan"), "upstream_ms": 1e300, "status": None},
                                 "not a line", {"at": None, "id": "x1", "pool": None}])
    assert proxy_feed.request_rows(st) == [("—", "—", "—/x1", "—", "—", "—", "—"),
                                           (BAD_TIME, "—", "—", "—", "—", "—", "—")]
    assert proxy_feed.breaker_lines(status(upstreams=[{"state": "open", "open_until": float("inf")}])) == [
        "upstream —: circuit open; failing since —, last: —; no key benched"]
