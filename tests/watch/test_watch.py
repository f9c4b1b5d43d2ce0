"""store.watch.home: the directory watch sees atomic replaces, bursts end on the newest
state, a missing home is waited for, and watching never writes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.watch import loop
from store.watch.home import HomeLoader, follow, watch_home
from store.watch.loop import backend
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True, params=["inotify", "watchfiles"])
def watch_backend(request, monkeypatch) -> str:
    """Every guarantee holds on both paths: inotify (Linux) and watchfiles (portable)."""
    monkeypatch.setenv("HERMES_ADMIN_WATCH", request.param)
    if request.param == "inotify" and backend() != "inotify":
        pytest.skip("no inotify here")
    assert backend() == request.param
    return request.param
ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from store.paths import Home
    from store.transaction import transaction
    home = Home(__import__("pathlib").Path(sys.argv[1]))
    n, gap = int(sys.argv[2]), float(sys.argv[3])
    for i in range(1, n + 1):
        with transaction(home) as doc:
            doc["credential_pool"]["openrouter"][0]["request_count"] = i
        if gap < 0:  # lockstep: the next write waits for the reader's go on stdin
            sys.stdin.readline()
        elif gap:
            time.sleep(gap)
""")


def seed(home: Home) -> None:
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="gen", priority=0)]}))


def run_writer(home: Home, n: int, gap: float) -> subprocess.Popen:
    """A writer process making *n* locked writes *gap* s apart (gap < 0: one per line on stdin)."""
    return subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(ROOT)), str(home.root),
                             str(n), str(gap)], stdin=subprocess.PIPE if gap < 0 else None,
                            text=True)


class Collector:
    """Runs follow() in a thread and records (generation, request_count) per state."""

    def __init__(self, home: Home) -> None:
        self.stop = threading.Event()
        self.seen: list[tuple[int, int | None]] = []
        self.names: list[set[str]] = []
        self.thread = threading.Thread(target=self._run, args=(home,), daemon=True)
        self.thread.start()

    def _run(self, home: Home) -> None:
        for state in follow(home, self.stop, loader=HomeLoader(home)):
            doc = state.doc
            count = None
            if doc is not None and doc.get("credential_pool", {}).get("openrouter"):
                count = doc["credential_pool"]["openrouter"][0].get("request_count")
            self.seen.append((state.generation, count))

    def wait(self, predicate, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.01)
        return predicate()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "watcher did not stop within 30 s"


def test_fifty_atomic_replaces_from_another_process_are_all_seen(tmp_home: Home) -> None:
    seed(tmp_home)
    c = Collector(tmp_home)
    try:
        assert c.wait(lambda: c.seen, 30), "no initial load"
        # Lockstep: each write waits until the watcher has reported the one before, so no
        # two writes can fall in one burst (which rightly ends on the newest state) however
        # late a busy machine schedules the watcher; each wait is bounded.
        proc = run_writer(tmp_home, 50, -1)
        try:
            for i in range(1, 51):
                assert c.wait(lambda i=i: any(v == i for _, v in c.seen), 30), f"write {i} unseen"
                proc.stdin.write("go\n")
                proc.stdin.flush()
            assert proc.wait(timeout=60) == 0
        finally:
            proc.kill()
            proc.wait(timeout=10)
    finally:
        c.close()
    values = [v for _, v in c.seen]
    assert set(range(1, 51)) <= set(values), sorted(set(range(1, 51)) - set(values))
    gens = [g for g, v in c.seen if v and v >= 1]
    assert len(set(gens)) == len(gens) >= 50 and gens == sorted(gens)


def test_negative_control_a_watch_on_the_file_misses_the_replaces(
        tmp_home: Home, monkeypatch: pytest.MonkeyPatch, watch_backend: str) -> None:
    """The reload test can fail: watching auth.json itself (not its directory) follows the
    first inode, which the first atomic replace unlinks, so later writes go unseen."""
    real = loop.RustNotify
    monkeypatch.setattr(loop, "RustNotify", lambda paths, *a: real([str(tmp_home.auth)], *a))
    if watch_backend == "inotify":
        # The Linux path arms with IN_ONLYDIR: a watch on the file cannot even be made there.
        monkeypatch.setenv("HERMES_ADMIN_WATCH", "watchfiles")
    seed(tmp_home)
    c = Collector(tmp_home)
    try:
        assert c.wait(lambda: c.seen, 5), "no initial load"
        proc = run_writer(tmp_home, 50, 0.04)
        assert proc.wait(timeout=60) == 0
        c.wait(lambda: any(v == 50 for _, v in c.seen), 3)
    finally:
        c.close()
    values = {v for _, v in c.seen}
    assert not set(range(1, 51)) <= values, "a file watch was expected to miss replaces"


def test_burst_ends_on_the_last_generation(tmp_home: Home) -> None:
    seed(tmp_home)
    c = Collector(tmp_home)
    try:
        assert c.wait(lambda: c.seen, 5)
        proc = run_writer(tmp_home, 100, 0.0)
        assert proc.wait(timeout=60) == 0
        assert c.wait(lambda: c.seen[-1][1] == 100, 10), c.seen[-5:]
    finally:
        c.close()
    # Coalesced, not lost: far fewer loads than writes is fine, the end state is not.
    assert c.seen[-1][1] == 100


def test_other_files_in_the_home_do_not_wake_the_watch(tmp_home: Home) -> None:
    seed(tmp_home)
    stop = threading.Event()
    got: list[set[str]] = []
    t = threading.Thread(target=lambda: [got.append(n) for n in watch_home(tmp_home, stop)],
                         daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.01)
        assert got == [{"auth.json", "config.yaml", ".env"}]
        for name in ("auth.lock", "auth.json.bak", ".hermes-admin-x.tmp", "auth.json.tmp.1.ab",
                     "notes.txt"):
            (tmp_home.root / name).write_text("x")
        time.sleep(0.3)
        assert len(got) == 1, got
        tmp_home.config.write_text("x: 1\n")
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert got[1] == {"config.yaml"}
    finally:
        stop.set()
        t.join(timeout=5)
    assert not t.is_alive()


def test_missing_home_is_waited_for_then_followed(tmp_path: Path) -> None:
    home = Home(tmp_path / "later")
    c = Collector(home)
    try:
        assert c.wait(lambda: c.seen, 5)
        assert c.seen[0][1] is None
        seed(home)
        assert c.wait(lambda: c.seen[-1][1] == 0, 5), c.seen
        # The home is removed and recreated: the watch re-arms on the new directory.
        import shutil

        shutil.rmtree(home.root)
        seed(home)
        proc = run_writer(home, 3, 0.05)
        assert proc.wait(timeout=30) == 0
        assert c.wait(lambda: c.seen[-1][1] == 3, 10), c.seen[-5:]
    finally:
        c.close()


def test_stop_ends_the_watch_and_watching_writes_nothing(tmp_home: Home) -> None:
    """Stopping ends the watch thread (a bounded join in close(); how promptly a StopFlag
    wakes it is tests/watch/test_watch_stop.py's, without a timed assert)."""
    seed(tmp_home)
    before = {p.name: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in tmp_home.root.iterdir()}
    c = Collector(tmp_home)
    assert c.wait(lambda: c.seen, 30)
    c.close()
    after = {p.name: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in tmp_home.root.iterdir()}
    assert after == before


async def test_app_shows_the_last_of_a_burst_of_100(tmp_home: Home) -> None:
    seed(tmp_home)
    app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=True, tick=False)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.dashboard.query_one(CredentialTable)
        k = "cred\x1fopenrouter\x1faaaaaa"

        async def shows(value: str, timeout: float = 10.0) -> bool:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if k in table.order and table.cell_text(k, "requests") == value:
                    return True
                await pilot.pause(0.02)
            return False

        await pilot.press("w")  # wide layout has the requests column
        assert await shows("0")
        proc = run_writer(tmp_home, 100, 0.0)
        assert proc.wait(timeout=60) == 0
        assert await shows("100"), table.cell_text(k, "requests")
        applied = app.state.generation
        await pilot.pause(0.3)
        assert table.cell_text(k, "requests") == "100"
        assert app.state.generation == applied  # nothing keeps reloading once it is quiet
