"""Partitions and crashes: Redis killed mid-run, a sync daemon SIGKILLed.

No host stops working while Redis is down, `fleet status` says since when it is
disconnected, and after reconnect (or restart) local transitions made meanwhile are
published and remote ones applied, each exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from store.fleet.client import FleetClient, connect
from store.fleet.state_file import STATE_FILE, read_state_file
from tests.conftest import HERMES_ADMIN
from tests.fleet_helpers import BOUND, SECRET, Daemon, bench, env_without_secrets, make_home, row
from tests.hermes_real import wait_for

pytestmark = pytest.mark.slow


def test_redis_killed_and_restarted_mid_run(tmp_path, redis_server):
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(b, redis_server.url, "host-b")
    try:
        redis_server.kill()
        assert wait_for(lambda: not da.sync.connected and not db.sync.connected, timeout=BOUND)
        assert wait_for(lambda: (read_state_file(a) or {}).get("connected") is False, timeout=BOUND)
        assert read_state_file(a)["disconnected_since"]
        out = subprocess.run([str(HERMES_ADMIN), "fleet", "status", "--home", str(a.root), "--redis", redis_server.url],
                             capture_output=True, text=True, timeout=60, env=env_without_secrets())
        assert out.returncode == 1 and "fleet: disconnected since " in out.stdout, out
        # Both hosts keep working on their own files meanwhile.
        bench(a, time.time() + 900)                      # KEY_1 benched on A
        bench(b, time.time() + 1800, rid="bbbbbb")       # KEY_2 benched on B
        assert row(a)["last_status"] == "exhausted" and row(b, "bbbbbb")["last_status"] == "exhausted"
        assert da.thread.is_alive() and db.thread.is_alive()
        redis_server.start()                                   # empty: it saved nothing
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        assert wait_for(lambda: row(a, "bbbbbb")["last_status"] == "exhausted", timeout=BOUND)
        assert wait_for(lambda: read_state_file(a)["connected"] is True, timeout=BOUND)
        # Exactly once: more reconciliations apply nothing more.
        # The stat is counted just after the file is written: wait for it, bounded.
        applied = (1, 1)
        assert wait_for(lambda: (da.sync.stats.applied, db.sync.stats.applied) == applied, timeout=BOUND)
        goal = (da.sync.stats.reconciles + 2, db.sync.stats.reconciles + 2)
        assert wait_for(lambda: (da.sync.stats.reconciles, db.sync.stats.reconciles) >= goal, timeout=BOUND)
        assert (da.sync.stats.applied, db.sync.stats.applied) == applied
    finally:
        da.close()
        db.close()


def _sync_proc(home, url: str, name: str) -> subprocess.Popen[str]:
    env = env_without_secrets()
    env["HERMES_ADMIN_FLEET_SECRET"] = SECRET.decode()
    return subprocess.Popen([str(HERMES_ADMIN), "fleet", "sync", "--home", str(home.root), "--redis", url,
                             "--name", name, "--interval", "1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_sync_daemon_sigkilled_and_restarted_loses_nothing(tmp_path, redis_server):
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da = Daemon(a, redis_server.url, "host-a")
    viewer = FleetClient(connect(redis_server.url), "test")
    proc = _sync_proc(b, redis_server.url, "host-b")
    try:
        assert wait_for(lambda: any(h.name == "host-b" for h in viewer.snapshot().hosts), timeout=BOUND)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=BOUND)
        bench(a, time.time() + 900)                       # while B's daemon is dead
        bench(b, time.time() + 1200, rid="bbbbbb")        # and B's own agent benches KEY_2
        assert wait_for(lambda: da.sync.stats.published >= 1, timeout=BOUND)
        assert row(b)["last_status"] is None              # negative control: nothing reached B yet
        proc = _sync_proc(b, redis_server.url, "host-b")
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        assert wait_for(lambda: row(a, "bbbbbb")["last_status"] == "exhausted", timeout=BOUND)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=BOUND)
        da.close()
    assert proc.returncode == 0


def test_sync_keeps_running_and_writes_nothing_while_the_store_is_unreadable(tmp_path, redis_server):
    a = make_home(tmp_path, "a")
    da = Daemon(a, redis_server.url, "host-a")
    try:
        a.auth.write_text("{ not json", encoding="utf-8")
        before = a.auth.read_bytes()
        goal = da.sync.stats.reconciles + 2
        assert wait_for(lambda: da.sync.stats.reconciles >= goal or len(da.sync.stats.errors) >= 2, timeout=BOUND)
        assert a.auth.read_bytes() == before and da.thread.is_alive()
        assert any("auth.json" in e for e in da.sync.stats.errors)
    finally:
        da.close()
    assert (a.root / STATE_FILE).exists() and os.stat(a.root / STATE_FILE).st_mode & 0o077 == 0


@pytest.mark.parametrize("verb", [["status"], ["status", "--json"], ["reset", "fl:0123456789ab"],
                                  ["bench", "fl:0123456789ab", "60"]])
def test_every_fleet_verb_says_disconnected_when_redis_is_unreachable(tmp_path, verb):
    """Found by the CLI fuzz: `fleet reset` crashed (exit 1, internal error) on a refused
    connection because the disconnected report read `--json`, which only `status` has."""
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    out = subprocess.run([str(HERMES_ADMIN), "fleet", verb[0], "--home", str(home), "--redis",
                          "redis://127.0.0.1:9/0", *verb[1:]], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "internal error" not in out.stderr + out.stdout
    assert "disconnected" in out.stdout
