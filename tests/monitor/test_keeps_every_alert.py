"""The monitor keeps every alert (#29): what a hostile trial found, each with its control.

- alerts still owed when the monitor stops are kept in its status file (bounded) and sent
  by the next run; the control (today's behaviour: nothing taken over) loses them;
- deliveries to different targets run concurrently: a receiver that never answers does not
  hold back one that does; the control (one delivery at a time, the dead target first)
  delivers to the live one only after the dead one gave up;
- ``--drain-timeout 0`` is accepted (hypothesis over the bound; the control is the old bound).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.errors import BadInput
from store.monitor import pending, status
from store.monitor.alerts import FIRING, Notification
from store.monitor.conditions import Condition
from store.monitor.dispatch import Dispatcher
from store.paths import Home
from tests.conftest import run_cli
from tests.monitor.helpers import Running, Webhook, exhaust_all, rules, seed_home, targets, wait_until
from tui.cli.monitor import MAX_DRAIN, check_drain

pytestmark = pytest.mark.slow


@pytest.fixture
def hook() -> Any:
    w = Webhook()
    yield w
    w.close()


class Silent:
    """A loopback TCP receiver that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def url(self, timeout: float) -> str:
        return f"json://127.0.0.1:{self.port}/never?cto={timeout:g}&rto={timeout:g}"

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def silent() -> Any:
    s = Silent()
    yield s
    s.close()


def _pool_posts(hook: Webhook) -> list[dict[str, Any]]:
    return [p for p in hook.got() if "no usable key" in str(p.get("title"))]


def _stop_now(run: Running) -> None:
    run.run(run.monitor.stop(0.0))


def _restart_sends_what_was_owed(home: Home, hook: Webhook) -> list[dict[str, Any]]:
    """A delivery failing (the receiver answers 500) when the monitor stops; the receiver
    then works and a new monitor starts: what reaches it."""
    seed_home(home, 2)
    hook.status = 500
    kw = {"home": home, "rules": rules(quiet=0.3, retries=10, long_cooldown=False),
          "targets": targets(hook.url), "backoff": 0.2}
    with Running(**kw) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(home)
        wait_until(lambda: _pool_posts(hook), what="a first (failing) attempt")
        _stop_now(run)
    doc = json.loads((home.root / "hermes-admin-monitor.json").read_text())
    assert doc["state"] == "stopped"
    # The stopped run's last attempt, if one was under way, has ended before the receiver works.
    wait_until(lambda: not any(t.name.startswith("monitor-deliver") for t in threading.enumerate()),
               what="the stopped run's delivery threads to end")
    hook.status = 200
    seen = len(hook.got())
    with Running(**kw) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the restarted monitor's evaluation")
        wait_until(run.idle, what="the monitor to settle")
        got = [p for p in hook.got()[seen:] if "no usable key" in str(p.get("title"))]
    return [doc, *got]


def test_an_alert_owed_when_the_monitor_stops_is_sent_after_a_restart(tmp_home: Home, hook: Webhook) -> None:
    doc, *after = _restart_sends_what_was_owed(tmp_home, hook)
    owed = [e for e in doc["pending"] if e["condition"]["rule"] == "pool_empty"]
    assert len(owed) == 1 and owed[0]["kind"] == "firing" and owed[0]["targets"] == [hook.url]
    assert [p["type"] for p in after] != [] and all("[critical]" in p["title"] for p in after)
    assert len(after) == 1                       # sent once, not once per restart evaluation


def test_control_without_taking_over_the_owed_alerts_they_are_lost(tmp_home: Home, hook: Webhook,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's behaviour: a restarted monitor takes over nothing owed, and the open alert it
    seeds stays silent while the pool stays empty: the alert never arrives."""
    monkeypatch.setattr(pending, "taken_over", lambda _previous: [])
    _doc, *after = _restart_sends_what_was_owed(tmp_home, hook)
    assert after == []


def _owed(count: int, targets_: tuple[str, ...] = ("json://h/x",)) -> list[tuple[Notification, str]]:
    out = []
    for i in range(count):
        cond = Condition(f"pool_empty/default/p{i}", "pool_empty", "critical", "default",
                         f"default/p{i} has no usable key", "Pool p{i} has no usable credential: 3 cooling.",
                         pool=f"p{i}")
        n = Notification(FIRING, cond, 1000.0 + i, 1000.0)
        out += [(n, t) for t in targets_]
    return out


def test_what_is_owed_is_bounded_and_checked_like_an_outside_file() -> None:
    kept, dropped = pending.bounded(_owed(pending.KEEP + 7))
    assert len(kept) == pending.KEEP and dropped == 7 and kept[0]["at"] == 1000.0
    good = kept[:3]
    back = pending.taken_over({"pending": [*good, {"kind": "firing"}, "junk", {**good[0], "at": True},
                                           {**good[0], "kind": "other"}, {**good[0], "condition": {"key": 1}},
                                           {**good[0], "targets": []}, {**good[0], "targets": [7]}]})
    assert [n.at for n, _t in back] == [1000.0, 1001.0, 1002.0]
    assert back[0][0].condition == _owed(1)[0][0].condition
    assert pending.taken_over({"pending": "not a list"}) == [] and pending.taken_over(None) == []


def test_the_alerts_owed_for_10000_pools_round_trip_through_the_status_file(tmp_home: Home) -> None:
    """The hostile trial's scale: every pool of 10,000 owes its alert to two targets; the
    status file keeps every one and a restarted monitor gets them all back, in order."""
    owed = _owed(10_000, ("json://a/x", "ntfy://b/y"))
    entries, dropped = pending.bounded(owed)
    status.write(tmp_home, {"version": status.VERSION, "state": "stopped", "pending": entries,
                            "pending_dropped": dropped})
    back = pending.taken_over(status.read(tmp_home))
    assert dropped == 0 and len(back) == len(owed) == 20_000
    assert [(n.condition.key, t) for n, t in back] == [(n.condition.key, t) for n, t in owed]


def test_a_target_that_never_answers_does_not_hold_back_the_others(tmp_home: Home, hook: Webhook,
                                                                   silent: Silent) -> None:
    """The dead receiver holds its connection for 60 s; the live one has its alert while the
    dead one's delivery is still under way (no failure recorded yet), so well within the
    dead one's timeout. What the dead one is still owed is kept when the monitor stops."""
    seed_home(tmp_home, 2)
    with Running(home=tmp_home, rules=rules(quiet=0.3, retries=0, long_cooldown=False),
                 targets=targets(silent.url(60), hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: silent.conns, what="the dead receiver's connection")
        wait_until(lambda: _pool_posts(hook), what="the live receiver's alert")
        wait_until(lambda: run.call(lambda: [d for d in run.monitor.deliveries if d.result == "sent"]),
                   what="the live delivery recorded")
        assert run.call(lambda: [d for d in run.monitor.deliveries if d.result == "failed"]) == []
        assert silent.conns and not run.call(run.monitor.idle)
        _stop_now(run)
    doc = json.loads((tmp_home.root / "hermes-admin-monitor.json").read_text())
    assert [e["targets"] for e in doc["pending"]] == [[targets(silent.url(60))[0].shown]]


def test_control_one_delivery_at_a_time_the_live_target_waits_for_the_dead(
        tmp_home: Home, hook: Webhook, silent: Silent, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the bound at 1 (deliveries one at a time) and the dead target first, the live one
    gets its alert only after the dead one gave up: the test above would see the difference."""
    original = Dispatcher.__init__

    def serial(self: Dispatcher, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        self.parallel = 1

    monkeypatch.setattr(Dispatcher, "__init__", serial)
    seed_home(tmp_home, 2)
    with Running(home=tmp_home, rules=rules(quiet=0.3, retries=0, long_cooldown=False),
                 targets=targets(silent.url(1.5), hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: silent.conns, what="the dead receiver's connection")
        # Until the dead target's delivery ends, the live one has nothing.
        first = wait_until(lambda: run.call(lambda: [d for d in run.monitor.deliveries if d.result == "failed"])
                           or _pool_posts(hook), what="either outcome")
        assert first and not isinstance(first[0], dict), "the live target was served before the dead one ended"
        wait_until(lambda: _pool_posts(hook), what="the live receiver's alert, late")


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_drain_timeout_accepts_exactly_0_to_the_maximum(seconds: float) -> None:
    if 0.0 <= seconds <= MAX_DRAIN:
        assert check_drain(seconds) == seconds
    else:
        with pytest.raises(BadInput) as err:
            check_drain(seconds)
        assert err.value.field == "--drain-timeout"


def test_drain_timeout_bounds_and_the_old_bound_as_control() -> None:
    for ok in (0.0, -0.0, 5e-324, MAX_DRAIN):
        assert check_drain(ok) == ok

    def old(seconds: float) -> float:       # today's check: the bound excluded 0
        if not 0 < seconds <= MAX_DRAIN:
            raise BadInput("--drain-timeout", "must be between 0 and 3600 seconds")
        return seconds

    with pytest.raises(BadInput):
        old(0.0)


def test_drain_timeout_0_through_the_cli(tmp_home: Home) -> None:
    seed_home(tmp_home, 1)
    proc = run_cli(tmp_home, "monitor", "--drain-timeout", "0", "--metrics", "none", "--check")
    assert proc.returncode == 0, proc.stderr


def test_monitor_status_says_what_a_stopped_monitor_still_owes(tmp_home: Home) -> None:
    seed_home(tmp_home, 1)
    entries, dropped = pending.bounded(_owed(3, ("json://a/x", "ntfy://b/y")))
    status.write(tmp_home, {"version": status.VERSION, "state": "stopped", "pid": 1, "updated_at": 1000.0,
                            "pending": entries, "pending_dropped": dropped})
    proc = run_cli(tmp_home, "monitor", "status", ok=False)
    assert proc.returncode == 1 and "3 alert(s) undelivered, sent by the next run" in proc.stdout


class _Held:
    """A deliverer whose every delivery waits at a gate: it counts how many run at once."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.now = self.most = self.calls = 0

    def deliver_one(self, n: Notification, t: Any) -> Any:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)
        self.gate.wait(20)
        with self.lock:
            self.now -= 1
        return None


def _run_dispatch(parallel: int, count: int = 12) -> tuple[_Held, int]:
    held = _Held()
    ts = targets(*(f"json://127.0.0.1:{9000 + i}/t" for i in range(count)))

    async def go() -> int:
        d = Dispatcher(held, ts, done=lambda _d: None, log=lambda _m: None, parallel=parallel)  # type: ignore[arg-type]
        d.start()
        cond = Condition("k", "pool_empty", "critical", "default", "t", "x")
        d.put(Notification(FIRING, cond, 1.0, 1.0))
        for _ in range(2000):                     # bounded: until the bound is reached
            if held.now >= min(parallel, count):
                break
            await asyncio.sleep(0.01)
        running = held.calls
        held.gate.set()
        owed = await d.drain(20)
        assert owed == []
        return running

    return held, asyncio.run(go())


def test_deliveries_across_targets_run_at_once_up_to_the_bound() -> None:
    held, running = _run_dispatch(parallel=8)
    assert running == 8 and held.most == 8 and held.calls == 12
    # Control: with a bound of 12, all twelve run at once: the counter can see more than 8.
    held, running = _run_dispatch(parallel=12)
    assert running == 12 and held.most == 12
