"""The status bar says ``● LIVE`` only while the screen is the files as they are (#28): a corrupt
auth.json (the banner's) or a watcher that fails or stops replaces it with ``✖ NOT LIVE`` and why,
the stopped watcher with the time the last change was seen."""

from __future__ import annotations

import asyncio
import time
from typing import Iterator

import pytest

import tui.app.console as console_mod
from store.paths import Home
from tests.tui_sample import NOW, make_app, write_sample
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.services.liveness import Liveness, hhmmss
from tui.widgets import StatusBar


def status(app: HermesAdminApp) -> str:
    return app.dashboard.query_one(StatusBar).text


async def until(pred, timeout: float = 10.0) -> bool:
    """Bounded polling on the event loop (never a sleep to synchronise)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.02)
    return pred()


async def test_a_corrupt_store_is_not_live_and_a_good_one_is_again(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = make_app(tmp_home)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        assert "● LIVE" in status(app)
        tmp_home.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
        app.reload()
        await pilot.pause()
        assert "● LIVE" not in status(app) and "✖ NOT LIVE: auth.json unreadable" in status(app)
        write_sample(tmp_home)
        app.reload()
        await pilot.pause()
        assert "● LIVE" in status(app) and "NOT LIVE" not in status(app)


def one_read_then(end: str):
    """A watcher that reads the home once, then fails (``raise``) or ends (``return``)."""
    def follow(home: Home, stop, *, loader) -> Iterator:
        yield loader.load(None)
        if end == "raise":
            raise OSError("inotify: too many watches")
    return follow


@pytest.mark.parametrize("control", [False, True], ids=["as-built", "control-no-liveness"])
async def test_a_watcher_that_stops_says_so_with_the_last_change(tmp_home: Home, monkeypatch,
                                                                control: bool) -> None:
    """The control keeps the app deaf to its watcher's end: the same screen says LIVE, so the
    as-built NOT LIVE comes from the liveness, not from the harness."""
    write_sample(tmp_home)
    monkeypatch.setattr(console_mod, "follow", one_read_then("return"))
    if control:
        monkeypatch.setattr(Liveness, "stopped", lambda self, why, now: None)
    app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=True, tick=False)
    async with app.run_test(size=(120, 24)) as pilot:
        assert await until(lambda: app.state is not None)
        await pilot.pause()
        if control:
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert "● LIVE" in status(app)
            return
        assert await until(lambda: "NOT LIVE" in status(app)), status(app)
        assert f"✖ NOT LIVE: watcher stopped, last change {hhmmss(app.state.read_at)}" in status(app)
        assert "● LIVE" not in status(app)


async def test_a_failing_watcher_says_retrying(tmp_home: Home, monkeypatch) -> None:
    write_sample(tmp_home)
    monkeypatch.setattr(console_mod, "follow", one_read_then("raise"))
    app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=True, tick=False)
    async with app.run_test(size=(120, 24)):
        assert await until(lambda: "watcher failing, retrying" in status(app)), status(app)
        assert "● LIVE" not in status(app)


def test_badge_words() -> None:
    live = Liveness()
    assert live.badge(paused=False, unreadable=False, seen=NOW) == "● LIVE"
    assert live.badge(paused=True, unreadable=True, seen=NOW) == "⏸ PAUSED"
    live.failed("boom", NOW)
    assert live.badge(paused=False, unreadable=False, seen=None) == "✖ NOT LIVE: watcher failing, retrying"
    live.loaded()
    assert live.following
    live.stopped("ended", NOW)
    live.loaded()                     # a late read does not make an ended watcher live again
    assert not live.following
