"""The watcher's quiet window and read-ahead (store.watch.inotify.TreeWatch.collect, as
store.watch.loop.InotifyTree drives it, and store.watch.read_ahead.ReadAhead).

A burst is driven by a scripted event timeline on a fake clock, so the window's logic is
checked exactly, with no timing in the test. ReadAhead is driven with a real HomeLoader
on a real home, its calls made as the watcher makes them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from store.paths import Home
from store.pools import events as ev
from store.profiles.live import RootChange
from store.transaction import transaction
from store.watch import inotify
from store.watch.home import SETTLES, HomeClassifier, HomeLoader
from store.watch.loop import DEBOUNCE_MS, InotifyTree
from store.watch.read_ahead import ReadAhead
from tests.conftest import make_row, make_store, write_store


class Scripted(inotify.TreeWatch):
    """A TreeWatch whose events come from a timeline (ms -> names in *base*) on a fake clock."""

    def __init__(self, timeline: list[tuple[float, str]], clock: list[float],
                 base: str = "/root") -> None:
        self.fd = -1
        self.root = "/root"
        self.base = base
        self.timeline = sorted(timeline)
        self.clock = clock

    def read_paths(self):
        now = self.clock[0]
        due = [n for t, n in self.timeline if t <= now]
        self.timeline = [(t, n) for t, n in self.timeline if t > now]
        for name in due:
            yield inotify.IN_CLOSE_WRITE, f"{self.base}/{name}"

    def wait(self, timeout_ms: int, wake_fd: int | None = None) -> bool:
        nxt = self.timeline[0][0] if self.timeline else float("inf")
        until = self.clock[0] + timeout_ms
        self.clock[0] = min(nxt, until)
        return nxt <= until


def run_collect(monkeypatch, timeline, *, ahead_ms: float = 0.0, settles=frozenset()):
    clock = [0.0]
    monkeypatch.setattr(inotify.time, "monotonic", lambda: clock[0] / 1000)
    calls: list[tuple[float, set[str]]] = []

    def ahead(names: set[str]) -> None:
        calls.append((clock[0], set(names)))
        clock[0] += ahead_ms          # the read-ahead takes this long

    home = HomeClassifier()
    home.settles = settles
    tree = InotifyTree(Path("/root"), home, watch=Scripted(timeline, clock))
    names = tree.burst(threading.Event(), 20, 10, ahead).change   # debounce 20, step 10
    return names, clock[0], calls


def test_the_wait_for_quiet_does_not_grow_by_the_read_ahead(monkeypatch) -> None:
    # auth.json replaced at 0 ms, nothing after: the burst ends 10 ms after the event,
    # whether the read-ahead took 0 or 4 ms (it ran inside the wait).
    for took in (0.0, 4.0):
        names, ended, calls = run_collect(monkeypatch, [(0.0, "auth.json")], ahead_ms=took)
        assert names == {"auth.json"} and calls == [(0.0, {"auth.json"})]
        assert ended == 10.0


def test_a_later_write_restarts_the_wait_and_is_told_to_the_read_ahead(monkeypatch) -> None:
    names, ended, calls = run_collect(monkeypatch, [(0.0, "auth.json"), (6.0, "config.yaml")])
    assert names == {"auth.json", "config.yaml"}
    assert calls == [(0.0, {"auth.json"}), (6.0, {"config.yaml"})]
    assert ended == 16.0
    # A burst that keeps going is cut at the debounce bound (20 ms) all the same.
    names, ended, _ = run_collect(monkeypatch, [(t, "auth.json") for t in range(0, 40, 5)])
    assert ended == 20.0


def test_the_store_lock_closing_settles_instead_of_restarting_the_wait(monkeypatch) -> None:
    timeline = [(0.0, "auth.json"), (3.0, "auth.lock")]
    _, ended, _ = run_collect(monkeypatch, timeline, settles=SETTLES)
    assert ended == 10.0
    # Control: counted as an event, the lock's close would have held the burst to 13 ms.
    _, ended, _ = run_collect(monkeypatch, timeline)
    assert ended == 13.0


def seeded(home: Home) -> None:
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", priority=0),
                                                 make_row("bbbbbb", priority=1)]}))


def test_a_lone_write_is_read_once_during_the_wait(tmp_home: Home, monkeypatch) -> None:
    seeded(tmp_home)
    loader = HomeLoader(tmp_home)
    loader.load(None)
    loads: list[set[str]] = []
    real = loader.load
    monkeypatch.setattr(loader, "load", lambda names=None: (loads.append(set(names or ())), real(names))[1])
    ahead = ReadAhead(loader, DEBOUNCE_MS / 1000)
    with transaction(tmp_home) as doc:
        doc["credential_pool"]["openrouter"][0]["label"] = "renamed"
    ahead({"auth.json"})                 # the watcher saw it, the burst not over yet
    assert loads == [{"auth.json"}]      # read at once...
    state = ahead.finish({"auth.json"})  # ...and nothing more came: that read is the state
    assert loads == [{"auth.json"}]
    assert state.pools[0].credentials[0].label == "renamed"


def test_a_burst_is_read_again_and_keeps_the_events_of_both_reads(tmp_home: Home) -> None:
    seeded(tmp_home)
    loader = HomeLoader(tmp_home)
    loader.load(None)
    ahead = ReadAhead(loader, DEBOUNCE_MS / 1000)
    with transaction(tmp_home) as doc:     # a 429 benches a key...
        row = doc["credential_pool"]["openrouter"][0]
        row.update(last_status="exhausted", last_status_at=time.time(),
                   last_error_code=429)
    ahead({"auth.json"})
    with transaction(tmp_home) as doc:     # ...and within the same burst it is renamed
        doc["credential_pool"]["openrouter"][0]["label"] = "renamed"
    ahead({"auth.json"})
    state = ahead.finish({"auth.json"})
    assert state.pools[0].credentials[0].label == "renamed"
    # The bench happened between the two reads: its event is kept.
    assert [e.kind for e in state.events] == [ev.EXHAUSTED]
    # Control: the second read alone has no event (the row was already benched in the
    # first), which is what showing only the last read would have lost.
    loader2 = HomeLoader(tmp_home)
    loader2.load(None)
    assert loader2.load({"auth.json"}).events == []


def test_inside_a_run_of_bursts_nothing_is_read_ahead(tmp_home: Home, monkeypatch) -> None:
    seeded(tmp_home)
    loader = HomeLoader(tmp_home)
    loader.load(None)
    loads: list[int] = []
    real = loader.load
    monkeypatch.setattr(loader, "load", lambda names=None: (loads.append(1), real(names))[1])
    ahead = ReadAhead(loader, quiet_s=3600)   # every burst follows the last one closely
    ahead({"auth.json"})                      # a first burst after a quiet spell: read ahead
    ahead.finish({"auth.json"})
    assert len(loads) == 1
    ahead({"auth.json"})                      # the next one, at once: one read, at its end
    assert len(loads) == 1
    ahead.finish({"auth.json"})
    assert len(loads) == 2


TEAM = "/root/profiles/team"   # the same scripted timeline, in a profile of a root


def test_the_root_watch_lets_a_profiles_store_lock_settle_too(monkeypatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(inotify.time, "monotonic", lambda: clock[0] / 1000)
    timeline = [(0.0, "auth.json"), (3.0, "auth.lock")]
    got, _gone = Scripted(timeline, clock, TEAM).collect(10, 20, SETTLES)
    assert [p.rsplit("/", 1)[-1] for p in got] == ["auth.json", "auth.lock"]
    assert clock[0] == 10.0
    # Control: without it the lock's close holds the burst open to 13 ms.
    clock[0] = 0.0
    Scripted(timeline, clock, TEAM).collect(10, 20)
    assert clock[0] == 13.0


def root_with(tmp_path, *names: str):
    from store.profiles.root import Root
    root = Root(tmp_path / "hermes")
    for name in ("default", *names):
        home = root.profile(name).home
        home.root.mkdir(parents=True, exist_ok=True)
        seeded(home)
    return root


def root_ahead(tmp_path, monkeypatch, *names: str):
    """(a root with *names*, the list of its loader's loads, a RootReadAhead on that loader)."""
    from store.profiles.live import RootLoader, RootReadAhead
    root = root_with(tmp_path, *names)
    loader = RootLoader(root)
    loader.load()
    loads: list = []
    real = loader.load
    monkeypatch.setattr(loader, "load", lambda change=None: (loads.append(change), real(change))[1])
    return root, loads, RootReadAhead(loader, DEBOUNCE_MS / 1000)


def test_the_root_reads_a_lone_write_ahead_and_keeps_both_reads_events(tmp_path, monkeypatch) -> None:
    root, loads, ahead = root_ahead(tmp_path, monkeypatch, "team")
    team = root.profile("team").home
    # A lone write: read once, as it arrives.
    with transaction(team) as doc:
        doc["credential_pool"]["openrouter"][0]["label"] = "renamed"
    ahead(RootChange({"team": {"auth.json"}}))
    state = ahead.finish(RootChange({"team": {"auth.json"}}))
    assert len(loads) == 1
    assert state.states["team"].pools[0].credentials[0].label == "renamed"
    # A burst: bench, then rename, in one profile; the bench's event is kept.
    ahead._last_done = -1e9                  # a quiet spell since the last burst
    with transaction(team) as doc:
        doc["credential_pool"]["openrouter"][1].update(
            last_status="exhausted", last_status_at=time.time(), last_error_code=429)
    ahead(RootChange({"team": {"auth.json"}}))
    with transaction(team) as doc:
        doc["credential_pool"]["openrouter"][1]["label"] = "benched"
    ahead(RootChange({"team": {"auth.json"}}))
    state = ahead.finish(RootChange({"team": {"auth.json"}}))
    assert len(loads) == 3
    assert [e.kind for e in state.states["team"].events] == [ev.EXHAUSTED]
    assert state.states["team"].pools[0].credentials[1].label == "benched"
    # The default profile was not read in this burst: it has no event to repeat.
    assert state.states["default"].events == []


def test_the_root_does_not_read_a_rescan_ahead(tmp_path, monkeypatch) -> None:
    root, loads, ahead = root_ahead(tmp_path, monkeypatch)
    late = root.profile("late").home
    late.root.mkdir(parents=True)
    seeded(late)
    ahead(RootChange({}, rescan=True))        # a profile came: wait for the burst's end
    assert loads == []
    state = ahead.finish(RootChange({}, rescan=True))
    assert len(loads) == 1 and "late" in state.states
