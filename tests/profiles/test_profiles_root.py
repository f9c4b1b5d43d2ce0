"""A root of profiles: discovery, the one watcher, per-profile locks, corrupt-profile isolation."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

import store.profiles.live as rw
from store.errors import LockTimeout
from store.ops import actions
from store.paths import Home, root_of_home
from store.profiles import inventory
from store.profiles.live import RootChange, RootLoader, classify, follow_root, watch_root
from store.profiles.root import Root, discover, home_profile, resolve_root
from store.transaction import apply
from store.watch import inotify, loop
from tests.conftest import make_row, make_store, read_doc, write_store

KEY_A = "sk-or-v1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaAAAA"
KEY_B = "sk-or-v1-bbbbbbbbbbbbbbbbbbbbbbbbbbbbBBBB"


def seed(home: Home, key: str = KEY_A, rid: str = "aaaaaa") -> None:
    write_store(home, make_store({"openrouter": [make_row(rid, token=key)]}))


def make_root(tmp_path: Path, *names: str) -> Root:
    root = Root(tmp_path / "hermes")
    seed(Home(root.path))
    for i, n in enumerate(names):
        seed(Home(root.profiles_dir / n), key=f"sk-or-v1-{n:x<28}{i:04d}", rid=f"r{i}")
    return root


def wait_for(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


@pytest.fixture
def raw_flock():
    """Hold a raw fcntl.flock on a path, as a Hermes process would."""
    fds: list[int] = []

    def hold(path: Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        fds.append(fd)

    yield hold
    for fd in fds:
        os.close(fd)


# --- discovery ------------------------------------------------------------------------------

def test_discovery_lists_what_hermes_lists(tmp_path: Path) -> None:
    root = make_root(tmp_path, "team-a", "b_2")
    for odd in ("Upper", "-dash", "default", ".hidden", "x" * 65):
        (root.profiles_dir / odd).mkdir()
    (root.profiles_dir / "file").write_text("not a profile")
    assert [p.name for p in discover(root)] == ["default", "b_2", "team-a"]
    assert discover(Root(tmp_path / "missing")) == []


def test_root_is_derived_like_hermes(tmp_path: Path) -> None:
    x = tmp_path / "x"
    assert root_of_home(x / "profiles" / "coder") == x
    assert root_of_home(x) == x
    assert resolve_root(None, str(x / "profiles" / "coder")).path == x.absolute()
    assert resolve_root(None, None, {"HERMES_HOME": str(x / "profiles" / "c")}).path == x.absolute()
    assert resolve_root(str(tmp_path / "r"), str(x)).path == (tmp_path / "r").absolute()
    root = Root(x)
    assert home_profile(root, Home(x)) == "default"
    assert home_profile(root, Home(x / "profiles" / "coder")) == "coder"
    assert home_profile(root, Home(tmp_path / "elsewhere")) is None


def test_classify_keeps_only_the_files_we_read(tmp_path: Path) -> None:
    r = tmp_path
    assert classify(r, str(r / "auth.json")) == ("default", "auth.json", False)
    assert classify(r, str(r / "cron" / "jobs.json")) == ("default", "cron/jobs.json", False)
    assert classify(r, str(r / "profiles" / "t" / ".env")) == ("t", ".env", False)
    assert classify(r, str(r / "profiles" / "t" / "cron" / "jobs.json")) == ("t", "cron/jobs.json", False)
    assert classify(r, str(r / "profiles" / "t")) == (None, None, True)
    assert classify(r, str(r / "profiles")) == (None, None, True)
    for noise in ("logs/agent.log", "auth.lock", "profiles/t/auth.lock", "profiles/t/logs/x.log",
                  "profiles/t/sessions/auth.json", "profiles/Bad/auth.json", "cron/output/jobs.json"):
        assert classify(r, str(r / noise)) == (None, None, False), noise


# --- the watcher ----------------------------------------------------------------------------

class RootCollector:
    def __init__(self, root: Root) -> None:
        self.stop = threading.Event()
        self.states: list = []
        self.thread = threading.Thread(target=self._run, args=(root,), daemon=True)
        self.thread.start()

    def _run(self, root: Root) -> None:
        for state in follow_root(root, self.stop):
            self.states.append(state)

    def names(self) -> list[str]:
        return [p.name for p in self.states[-1].profiles] if self.states else []

    def ids(self, profile: str) -> list[str]:
        st = self.states[-1].states.get(profile) if self.states else None
        return [cv.id for pv in (st.pools if st else []) for cv in pv.credentials]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive(), "root watcher did not stop within 5 s"


def test_watcher_follows_profiles_added_and_removed(tmp_path: Path) -> None:
    root = make_root(tmp_path, "alpha", "beta")
    c = RootCollector(root)
    try:
        assert wait_for(lambda: c.names() == ["default", "alpha", "beta"]), c.names()
        seed(Home(root.profiles_dir / "gamma"), key=KEY_B, rid="gggggg")
        assert wait_for(lambda: "gamma" in c.names()), c.names()
        assert wait_for(lambda: c.states[-1].profile("gamma").pools != [])
        shutil.rmtree(root.profiles_dir / "alpha")
        assert wait_for(lambda: "alpha" not in c.names()), c.names()
        assert any("alpha" in s.removed for s in c.states)
        # A write in one profile is seen, and only that profile is re-read.
        before = c.states[-1].states["gamma"].generation
        beta_gen = c.states[-1].states["beta"].generation
        apply(Home(root.profiles_dir / "gamma"),
              lambda d: actions.reset(d, "openrouter", "gggggg", time.time()))
        assert wait_for(lambda: c.states[-1].states["gamma"].generation > before)
        assert c.states[-1].states["beta"].generation == beta_gen
    finally:
        c.close()


def test_one_watch_for_the_whole_root_and_noise_does_not_wake_it(tmp_path: Path) -> None:
    root = make_root(tmp_path, *(f"p{i}" for i in range(20)))
    stop = threading.Event()
    got: list[RootChange] = []
    t = threading.Thread(target=lambda: [got.append(c) for c in watch_root(root, stop)], daemon=True)
    t.start()
    try:
        assert wait_for(lambda: len(got) == 1)
        assert got[0].rescan
        (root.profiles_dir / "p3" / "logs").mkdir()
        for i in range(20):
            (root.profiles_dir / "p3" / "logs" / f"{i}.log").write_text("x")
            (root.profiles_dir / f"p{i}" / "auth.lock").write_text("")
        time.sleep(0.3)   # nothing may arrive: a bounded wait for an absence
        assert len(got) == 1, got
        (root.profiles_dir / "p7" / "config.yaml").write_text("x: 1\n")
        assert wait_for(lambda: len(got) >= 2)
        assert got[-1].changed == {"p7": {"config.yaml"}} and not got[-1].rescan
    finally:
        stop.set()
        t.join(timeout=5)
    assert not t.is_alive()


# --- per-profile locks and isolation --------------------------------------------------------

def test_action_changes_only_its_profile_under_its_own_lock(tmp_path: Path, raw_flock) -> None:
    root = make_root(tmp_path, "alpha", "beta")
    alpha, beta = root.profile("alpha").home, root.profile("beta").home
    beta_bytes, default_bytes = beta.auth.read_bytes(), Home(root.path).auth.read_bytes()
    raw_flock(beta.lock)            # a Hermes process busy in ANOTHER profile
    raw_flock(root.path / "auth.lock")
    out = apply(alpha, lambda d: actions.cooldown(d, "openrouter", "r0", time.time() + 600, time.time()),
                lock_timeout=2)
    assert out.changes and read_doc(alpha)["credential_pool"]["openrouter"][0]["last_status"] == "exhausted"
    assert beta.auth.read_bytes() == beta_bytes
    assert Home(root.path).auth.read_bytes() == default_bytes


def test_negative_control_a_flock_on_the_profiles_own_lock_does_block(tmp_path: Path, raw_flock) -> None:
    root = make_root(tmp_path, "alpha")
    alpha = root.profile("alpha").home
    before = alpha.auth.read_bytes()
    raw_flock(alpha.lock)
    with pytest.raises(LockTimeout) as err:
        apply(alpha, lambda d: actions.reset(d, "openrouter", "r0", time.time()), lock_timeout=0.2)
    assert str(alpha.lock) in str(err.value)
    assert alpha.auth.read_bytes() == before


def test_a_corrupt_profile_does_not_disturb_the_others(tmp_path: Path) -> None:
    root = make_root(tmp_path, "alpha", "broken", "zeta")
    broken = root.profile("broken").home
    broken.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
    bad_bytes = broken.auth.read_bytes()
    profiles = inventory.read_root(root)
    by = {p.name: p for p in profiles}
    assert [p.name for p in profiles] == ["default", "alpha", "broken", "zeta"]
    assert by["broken"].error is not None and by["broken"].error.path == broken.auth
    assert by["broken"].error.reason and by["broken"].pools == []
    for name in ("default", "alpha", "zeta"):
        assert by[name].error is None and len(by[name].pools) == 1
    # A live loader keeps the others live while one is corrupt, and never writes it.
    loader = RootLoader(root)
    state = loader.load()
    apply(root.profile("zeta").home, lambda d: actions.reset(d, "openrouter", "r2", time.time()))
    state = loader.load(RootChange({"zeta": {"auth.json"}, "broken": {"auth.json"}}))
    assert state.profile("broken").error is not None
    assert state.profile("zeta").pools[0].credentials[0].row.get("status_cleared_at")
    assert broken.auth.read_bytes() == bad_bytes


def test_watchers_do_not_multiply_with_profiles(tmp_path: Path, monkeypatch) -> None:
    """watchfiles (forced): one recursive notifier on the root."""
    monkeypatch.setenv("HERMES_ADMIN_WATCH", "watchfiles")
    made: list[tuple] = []
    real = loop.rust_notify

    def counting(*args, **kwargs):
        made.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "rust_notify", counting)
    root = make_root(tmp_path, *(f"p{i}" for i in range(30)))
    c = RootCollector(root)
    try:
        assert wait_for(lambda: len(c.names()) == 31)
        seed(Home(root.profiles_dir / "late"), key=KEY_B, rid="llllll")
        assert wait_for(lambda: "late" in c.names())
    finally:
        c.close()
    assert len(made) == 1 and made[0] == ((root.path,), {"recursive": True})


@pytest.mark.skipif(not inotify.available(), reason="inotify is Linux-only")
def test_one_inotify_descriptor_follows_every_profile_and_a_late_one(tmp_path: Path, monkeypatch) -> None:
    """The Linux path: one descriptor whatever the number of profiles, a watch per
    directory read, and a profile created later is watched (its writes are seen)."""
    monkeypatch.delenv("HERMES_ADMIN_WATCH", raising=False)
    made: list[inotify.TreeWatch] = []
    real = inotify.TreeWatch

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(inotify, "TreeWatch", Counting)
    root = make_root(tmp_path, *(f"p{i}" for i in range(30)))
    c = RootCollector(root)
    try:
        assert wait_for(lambda: len(c.names()) == 31)
        seed(Home(root.profiles_dir / "late"), key=KEY_B, rid="llllll")
        assert wait_for(lambda: "late" in c.names())
        assert str(root.profiles_dir / "late") in made[0].watched()
        # A write to the late profile is seen through its own watch.
        seed(Home(root.profiles_dir / "late"), key=KEY_B, rid="mmmmmm")
        assert wait_for(lambda: "mmmmmm" in c.ids("late"))
    finally:
        c.close()
    assert len(made) == 1


def test_a_file_write_lists_no_profiles_and_a_late_cron_dir_is_still_watched(tmp_path: Path,
                                                                             monkeypatch) -> None:
    """A write to a profile's auth.json is reported without listing every profile again
    (that listing cost ~1 ms a write on 50 profiles); a cron/ directory made later in a
    profile still gets its watch, and its jobs file is then seen."""
    monkeypatch.delenv("HERMES_ADMIN_WATCH", raising=False)
    listed: list[int] = []
    real = rw._root_dirs
    monkeypatch.setattr(rw, "_root_dirs", lambda path: (listed.append(1), real(path))[1])
    root = make_root(tmp_path, "alpha", "beta")
    c = RootCollector(root)
    try:
        assert wait_for(lambda: c.names() == ["default", "alpha", "beta"])
        before = len(listed)
        seed(Home(root.profiles_dir / "alpha"), key=KEY_B, rid="bbbbbb")
        assert wait_for(lambda: "bbbbbb" in c.ids("alpha"))
        assert len(listed) == before
        cron = root.profiles_dir / "beta" / "cron"
        cron.mkdir()
        assert wait_for(lambda: len(listed) > before)
        (cron / "jobs.json").write_text('{"jobs": [{"id": "j1", "name": "nightly", "schedule": "0 3 * * *", '
                                         '"prompt": "p", "provider": "openrouter"}]}')
        assert wait_for(lambda: [j.name for j in c.states[-1].profile("beta").cron_jobs] == ["nightly"])
    finally:
        c.close()
