"""The one Redis resubscribe loop (store.fleet.channel.follow_channel), with a scripted
subscription: bursts handed on whole and bounded, an interval's empty batch, back-off on
errors that starts over after a good subscription, and a stop seen at once.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest
import redis

from store.fleet import channel, sync
from tests.fleet_helpers import BOUND
from tests.hermes_real import wait_for
from tui.services import fleet_feed


class Scripted:
    """A subscription whose messages a test puts in a queue."""

    def __init__(self) -> None:
        self.q: queue.Queue[Any] = queue.Queue()
        self.closed = False
        self.waits = 0           # get_message calls that could block (one per tick)

    def put(self, *data: Any) -> None:
        for d in data:
            self.q.put({"type": "message", "channel": "c", "data": d})

    def get_message(self, timeout: float = 0.0) -> Any:
        self.waits += timeout > 0
        try:
            return self.q.get(timeout=timeout) if timeout > 0 else self.q.get_nowait()
        except queue.Empty:
            return None

    def close(self) -> None:
        self.closed = True


class Stop(threading.Event):
    """A stop event that records each back-off the loop asks for, and never sleeps it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return super().wait(0)


def run(**kw: Any) -> tuple[threading.Thread, list[list[Any]], threading.Event]:
    batches: list[list[Any]] = []
    stop = kw.pop("stop", None) or threading.Event()
    kw.setdefault("on_error", lambda exc: None)
    t = threading.Thread(target=channel.follow_channel, kwargs=dict(stop=stop, on_batch=batches.append, **kw),
                         daemon=True)
    t.start()
    return t, batches, stop


def test_a_burst_is_handed_on_whole_and_a_flood_in_bounded_bites() -> None:
    sub = Scripted()
    sub.put(*range(2500))
    t, batches, stop = run(subscribe=lambda: sub, burst=1000)
    try:
        assert wait_for(lambda: sum(map(len, batches)) == 2500, timeout=BOUND)
        assert [len(b) for b in batches] == [1000, 1000, 500]
        assert [x for b in batches for x in b] == list(range(2500))
        sub.put("late")
        assert wait_for(lambda: batches[-1] == ["late"], timeout=BOUND)
    finally:
        stop.set()
        t.join(timeout=BOUND)
    assert not t.is_alive() and sub.closed


def test_an_interval_without_messages_hands_on_an_empty_batch() -> None:
    sub = Scripted()
    subscribed = threading.Event()
    t, batches, stop = run(subscribe=lambda: sub, interval=0.05, on_subscribed=subscribed.set)
    try:
        assert wait_for(lambda: batches.count([]) >= 2, timeout=BOUND)
        assert subscribed.is_set()
    finally:
        stop.set()
        t.join(timeout=BOUND)


def test_no_interval_hands_on_nothing_until_a_message_comes() -> None:
    sub = Scripted()
    seen = threading.Event()
    t, batches, stop = run(subscribe=lambda: sub, tick=0.01, on_subscribed=seen.set)
    try:
        assert wait_for(lambda: seen.is_set() and sub.waits >= 20, timeout=BOUND)   # 20 ticks passed
        assert batches == []
        sub.put("x")
        assert wait_for(lambda: batches == [["x"]], timeout=BOUND)
    finally:
        stop.set()
        t.join(timeout=BOUND)


def test_errors_back_off_doubling_and_start_over_after_a_good_subscription() -> None:
    script: list[Any] = [redis.ConnectionError("refused")] * 4 + ["ok", RuntimeError("handler"),
                                                                   redis.ConnectionError("refused"), "ok"]
    subs: list[Scripted] = []

    def subscribe() -> Scripted:
        step = script.pop(0) if script else "ok"
        if isinstance(step, Exception):
            raise step
        sub = Scripted()
        if script and isinstance(script[0], RuntimeError):
            script.pop(0)
            sub.put("boom")              # its handler fails
        subs.append(sub)
        return sub

    errors: list[BaseException] = []
    stop = Stop()

    def on_batch(batch: list[Any]) -> None:
        if batch == ["boom"]:
            raise RuntimeError("the handler failed")

    t = threading.Thread(target=channel.follow_channel, kwargs=dict(
        subscribe=subscribe, stop=stop, on_batch=on_batch, on_error=errors.append, retry=(0.1, 0.4)), daemon=True)
    t.start()
    try:
        assert wait_for(lambda: len(subs) == 2, timeout=BOUND)
    finally:
        stop.set()
        t.join(timeout=BOUND)
    assert [type(e).__name__ for e in errors] == ["ConnectionError"] * 4 + ["RuntimeError", "ConnectionError"]
    # Doubling to the cap; after the good subscription (whose handler then failed) it starts over.
    assert stop.waits == [0.1, 0.2, 0.4, 0.4, 0.1, 0.2]
    assert subs[0].closed and subs[1].closed and not t.is_alive()


def test_a_stop_is_seen_at_once_and_the_subscription_closed() -> None:
    sub = Scripted()
    t, _batches, stop = run(subscribe=lambda: sub)    # waiting with no interval at all
    assert wait_for(lambda: t.is_alive(), timeout=BOUND)
    stop.set()
    t.join(timeout=BOUND)
    assert not t.is_alive() and sub.closed


@pytest.mark.parametrize("module", [sync, fleet_feed])
def test_the_sync_daemon_and_the_console_feed_share_the_one_loop(module: Any) -> None:
    assert module.follow_channel is channel.follow_channel


def test_a_flood_of_notices_is_counted_whole_and_logged_in_few_lines() -> None:
    from store.fleet.notices import LINES, REPEAT_AFTER, Notices

    now = [0.0]
    logged: list[str] = []
    notices = Notices(logged.append, clock=lambda: now[0])
    for i in range(5000):
        notices(f"message: a {i}-character string is not JSON; ignored")
    assert notices.count == 5000 and len(logged) == LINES
    notices("message: again")                       # the same window: held
    now[0] += REPEAT_AFTER
    notices("message: a 7-character string is not JSON; ignored")
    assert logged[LINES] == f"fleet: {5000 - LINES + 1} more notices in the last {REPEAT_AFTER:g} s not shown"
    assert logged[-1].startswith("fleet: message: a 7-character")
