"""The inotify watcher sleeps without a timeout step and still stops at once (store.watch.loop.StopFlag)."""

from __future__ import annotations

import threading
import time

import pytest

from store.paths import Home
from store.watch import home as w
from store.watch import inotify, loop

pytestmark = pytest.mark.skipif(not inotify.available(), reason="inotify is Linux-only")


def _run(home: Home, stop: threading.Event) -> threading.Thread:
    """The watcher on a thread, returned once it is armed (its first report: ``everything``)."""
    armed = threading.Event()

    def consume() -> None:
        for _ in w.watch_home(home, stop):
            armed.set()
    t = threading.Thread(target=consume, daemon=True)
    t.start()
    assert armed.wait(60), "the watcher never armed"
    return t


def test_a_stop_flag_ends_a_sleeping_watcher_at_once(tmp_path, monkeypatch) -> None:
    """The flag wakes poll() itself: with the poll timeout set to ten minutes the watcher
    still ends within a generous bound (no timed assert: only the wake-up can end it)."""
    monkeypatch.delenv("HERMES_ADMIN_WATCH", raising=False)
    monkeypatch.setattr(loop, "IDLE_STOP_CHECK_MS", 600_000)
    home = Home(tmp_path / "h")
    home.root.mkdir()
    stop = loop.StopFlag()
    t = _run(home, stop)
    time.sleep(0.3)  # armed (above); now asleep in poll(), whose timeout is 10 minutes
    stop.set()
    t.join(timeout=60)
    assert not t.is_alive(), "the stop flag did not wake the sleeping watcher"


def test_negative_control_a_plain_event_waits_for_the_timeout(tmp_path, monkeypatch) -> None:
    """With a plain Event only the poll timeout notices the stop: here set to 5 s."""
    monkeypatch.delenv("HERMES_ADMIN_WATCH", raising=False)
    monkeypatch.setattr(loop, "STOP_CHECK_MS", 5000)
    home = Home(tmp_path / "h")
    home.root.mkdir()
    stop = threading.Event()
    t = _run(home, stop)
    time.sleep(0.3)  # armed (above); now asleep in poll()
    stop.set()
    t.join(timeout=1.0)
    try:
        assert t.is_alive()
    finally:
        t.join(timeout=10)
