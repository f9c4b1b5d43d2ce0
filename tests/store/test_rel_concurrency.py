"""Reliability bar, multi-process part (RELIABILITY.md 1, 2, 3, 5, 9).

Every protection is shown to matter: each test that proves "nothing is lost" or
"the lock excludes" has a negative control that switches the protection off and
asserts the damage.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from store import authfile
from store.errors import LockTimeout
from store.lock import locked
from store.paths import Home
from store.transaction import transaction
from tests.helpers_proc import (
    counter_doc,
    result,
    run_cli,
    spawn,
    stop,
    wait_ready,
    write_doc,
)

pytestmark = pytest.mark.slow

ROW = "r00000"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "hermes")
    write_doc(h, counter_doc())
    return h


def _count(home: Home) -> int:
    doc = authfile.read_store(home).doc
    assert doc is not None
    return next(r["request_count"] for r in doc["credential_pool"]["openrouter"] if r["id"] == ROW)


def _hammer(home: Home, tmp_path: Path, mode: str, procs: int, n: int, gap: float = 0.0) -> int:
    """*procs* workers each increment ROW *n* times, all released at the same instant."""
    go = tmp_path / f"go-{mode}"
    workers = [spawn("incr", home=str(home.root), pool="openrouter", row_id=ROW, n=n,
                     go=str(go), mode=mode, gap=gap) for _ in range(procs)]
    try:
        for w in workers:
            wait_ready(w)
        go.touch()
        for w in workers:
            assert result(w, timeout=60) == {"done": n}
    finally:
        for w in workers:
            stop(w)
    return _count(home)


# 1. No lost updates ------------------------------------------------------------------------

def test_no_lost_updates_through_transaction(home: Home, tmp_path: Path) -> None:
    assert _hammer(home, tmp_path, "transaction", procs=8, n=200) == 1600
    assert stat.S_IMODE(os.stat(home.auth).st_mode) == 0o600
    doc = authfile.read_store(home).doc
    assert doc is not None and doc["version"] == 1
    # The other rows were carried through 1,600 rewrites untouched.
    assert [r["request_count"] for r in doc["credential_pool"]["openrouter"][1:]] == [0, 0]
    assert not [p for p in home.root.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("mode", ["nolock", "stale"])
def test_negative_control_loses_updates(home: Home, tmp_path: Path, mode: str) -> None:
    """Without the lock, or with the document read before taking it, updates get lost."""
    procs, n = 8, 25
    final = _hammer(home, tmp_path, mode, procs=procs, n=n, gap=0.003)
    assert final < procs * n, f"{mode}: expected lost updates, got all {final}"


# 2. Same lock as Hermes --------------------------------------------------------------------

def test_our_lock_excludes_a_raw_flock(home: Home) -> None:
    with locked(home.lock, timeout=2):
        assert result(spawn("try_flock", lock=str(home.lock))) == {"acquired": False}
    assert home.lock.exists(), "the lock file must survive release (Hermes never deletes it)"
    # Control: the same probe succeeds once we let go, so "busy" above was our lock.
    assert result(spawn("try_flock", lock=str(home.lock))) == {"acquired": True}


def test_a_raw_flock_holder_excludes_us(home: Home) -> None:
    holder = spawn("hold", home=str(home.root), how="raw")
    try:
        wait_ready(holder)
        started = time.monotonic()
        with pytest.raises(LockTimeout) as exc, locked(home.lock, timeout=0.3):
            pass
        assert time.monotonic() - started >= 0.29      # waited its timeout out; the raise is the bound
        assert str(home.lock) in str(exc.value)
        assert exc.value.exit_code == 4
    finally:
        stop(holder)
    with locked(home.lock, timeout=2):
        pass
    assert home.lock.exists()


@pytest.mark.hermes
def test_same_lock_as_real_hermes_both_ways(home: Home, hermes_path: Path, tmp_path: Path) -> None:
    """Hermes 0.19.0's own _auth_store_lock and ours exclude each other on one file."""
    from tests.hermes_real import partner_env

    fake_home = tmp_path / "fake-user-home"
    fake_home.mkdir()
    env = partner_env(home.root, hermes_path, fake_home)

    with locked(home.lock, timeout=2):
        verdict = result(spawn("hermes_lock", env=env, action="try"), timeout=60)
    assert verdict["acquired"] is False, verdict
    assert verdict["lock"] == str(home.lock), "Hermes derives a different lock path"
    # Control: with ours released, Hermes gets it.
    assert result(spawn("hermes_lock", env=env, action="try"), timeout=60)["acquired"] is True

    holder = spawn("hermes_lock", env=env, action="hold")
    try:
        wait_ready(holder, timeout=60)
        with pytest.raises(LockTimeout), locked(home.lock, timeout=0.3):
            pass
    finally:
        stop(holder)
    with locked(home.lock, timeout=2):
        pass
    assert home.lock.exists()


# 3. Holder crash ---------------------------------------------------------------------------

def test_killed_holder_releases_the_lock_and_leaves_the_store(home: Home) -> None:
    before = home.auth.read_bytes()
    holder = spawn("hold", home=str(home.root), how="transaction")
    try:
        wait_ready(holder)
        # Control: while it lives, we cannot get in.
        with pytest.raises(LockTimeout), locked(home.lock, timeout=0.2):
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=5)
        started = time.monotonic()
        with locked(home.lock, timeout=5):
            waited = time.monotonic() - started
    finally:
        stop(holder)
    assert waited < 2.0, f"lock took {waited:.2f}s to come free after the holder died"
    assert home.auth.read_bytes() == before
    assert authfile.read_store(home).doc == json.loads(before)


# 5. Readers never see a torn file ----------------------------------------------------------

def _poll_while(home: Home, tmp_path: Path, name: str, write_once, seconds: float,
                min_writes: int = 200, cap: float = 15.0) -> list[dict]:
    """Rewrite the store for *seconds* (and at least *min_writes* times, within *cap*
    seconds on a loaded machine) while two unlocked reader processes poll it."""
    stop_file = tmp_path / f"stop-{name}"
    readers = [spawn("reader", home=str(home.root), stop=str(stop_file)) for _ in range(2)]
    try:
        for r in readers:
            wait_ready(r)
        writes = 0
        started = time.monotonic()
        while True:
            write_once(writes)
            writes += 1
            elapsed = time.monotonic() - started
            if (elapsed >= seconds and writes >= min_writes) or elapsed >= cap:
                break
        stop_file.touch()
        out = [result(r, timeout=30) for r in readers]
    finally:
        for r in readers:
            stop(r)
    assert writes >= min_writes, f"only {writes} writes in {cap}s: the test stressed nothing"
    return out


def test_readers_never_see_a_torn_file(tmp_path: Path) -> None:
    home = Home(tmp_path / "hermes")
    write_doc(home, counter_doc(rows=50, pad=200))
    assert 20_000 <= home.auth.stat().st_size <= 40_000

    def write_once(i: int) -> None:
        with transaction(home) as doc:
            doc["credential_pool"]["openrouter"][i % 50]["request_count"] += 1

    out = _poll_while(home, tmp_path, "atomic", write_once, seconds=2.5)
    assert sum(o["reads"] for o in out) > 1000, out
    assert [o["errors"] for o in out] == [0, 0], out
    assert [o["missing"] for o in out] == [0, 0], out


def test_negative_control_in_place_writer_tears_reads(tmp_path: Path) -> None:
    home = Home(tmp_path / "hermes")
    raw = write_doc(home, counter_doc(rows=50, pad=200))
    chunks = [raw[i:i + 4096] for i in range(0, len(raw), 4096)]

    def write_once(i: int) -> None:
        with open(home.auth, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
                fh.flush()
                os.sched_yield()

    out = _poll_while(home, tmp_path, "in-place", write_once, seconds=1.0, min_writes=30)
    assert sum(o["errors"] for o in out) > 0, out


# 9. Bounded waits --------------------------------------------------------------------------

def test_cli_write_gives_up_on_a_stopped_holder(home: Home) -> None:
    before = home.auth.read_bytes()
    holder = spawn("hold", home=str(home.root), how="raw")
    try:
        wait_ready(holder)
        os.kill(holder.pid, signal.SIGSTOP)
        started = time.monotonic()
        # A write that changes something (a reset of keys already ok writes nothing at all).
        proc = run_cli("cooldown", "openrouter", "1", "--for", "15m", "--lock-timeout", "1", home=home, timeout=20)
        elapsed = time.monotonic() - started
    finally:
        stop(holder)
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    assert str(home.lock) in proc.stderr
    # It waited its 1 s out (a busy machine only makes that later); run_cli's timeout bounds the rest.
    assert elapsed >= 0.9, f"CLI gave up after {elapsed:.2f}s, before its 1s"
    assert home.auth.read_bytes() == before
    # Control: with the holder gone the very same command goes through.
    ok = run_cli("cooldown", "openrouter", "1", "--for", "15m", "--lock-timeout", "1", home=home, timeout=20)
    assert ok.returncode == 0, ok.stderr
    assert home.auth.read_bytes() != before
