"""Fleet sync between hosts through a real redis-redis_server (store.fleet, `fleet sync`).

Each test runs two or three in-process sync daemons on separate homes against a real
redis-redis_server on a loopback port, writes the way Hermes and hermes-admin do, and waits
(bounded polling) for the other homes' files to show the result.
"""

from __future__ import annotations

import time

import pytest

from store.fleet import keys as fkeys
from store.transaction import transaction
from tests.fleet_helpers import (
    BOUND,
    KEY_1,
    POOL,
    SECRET,
    Daemon,
    bench,
    env_without_secrets,
    make_home,
    reset,
    row,
)
from tests.hermes_real import wait_for

pytestmark = pytest.mark.slow

FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)


def test_bench_on_a_reaches_b_and_reset_on_b_clears_a(tmp_path, redis_server):
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(b, redis_server.url, "host-b")
    try:
        until_at = time.time() + 600
        bench(a, until_at)
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        rb = row(b)
        assert abs(rb["last_error_reset_at"] - until_at) < 1.0
        assert rb["last_error_code"] == 429
        assert "host-a" in rb["last_error_message"]
        assert KEY_1 not in rb["last_error_message"]        # the provider echo stays redacted
        assert row(b, "bbbbbb")["last_status"] is None      # another key is untouched
        reset(b)
        assert wait_for(lambda: row(a)["last_status"] is None, timeout=BOUND)
        assert row(a)["status_cleared_at"] is not None
    finally:
        da.close()
        db.close()


def test_reset_on_b_beats_a_stale_bench_written_back_on_a(tmp_path, redis_server):
    """A live Hermes 0.19 on A writes back a cooldown it held from before the reset."""
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(b, redis_server.url, "host-b")
    try:
        bench(a, time.time() + 600)
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        stale = dict(row(a))
        reset(b)
        assert wait_for(lambda: row(a)["last_status"] is None, timeout=BOUND)
        with transaction(a) as doc:            # the write-back, with its old last_status_at
            target = next(r for r in doc["credential_pool"][POOL] if r["id"] == "aaaaaa")
            for f in ("last_status", "last_status_at", "last_error_code", "last_error_reset_at"):
                target[f] = stale[f]
        # A's sync puts the reset back (the bench was observed before it) and B stays clear.
        assert wait_for(lambda: row(a)["last_status"] is None, timeout=BOUND)
        assert row(b)["last_status"] is None
    finally:
        da.close()
        db.close()


def test_recooling_on_b_extends_a(tmp_path, redis_server):
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(b, redis_server.url, "host-b")
    try:
        first = time.time() + 300
        bench(a, first)
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        later = time.time() + 3000
        bench(b, later)
        assert wait_for(lambda: abs((row(a)["last_error_reset_at"] or 0) - later) < 1.0, timeout=BOUND)
        shorter = time.time() + 100          # a shorter bench later does not shorten it
        bench(a, shorter)
        assert wait_for(lambda: da.sync.stats.published >= 2 and db.sync.stats.reconciles >= 3, timeout=BOUND)
        assert abs(row(b)["last_error_reset_at"] - later) < 1.0
    finally:
        da.close()
        db.close()


def test_hermes_on_b_skips_the_key_host_a_benched(tmp_path, tmp_home, hermes, redis_server):
    from tests.conftest import make_row, make_store, write_store

    write_store(tmp_home, make_store({POOL: [
        make_row("aaaaaa", label="one", priority=0, token=KEY_1),
        make_row("bbbbbb", label="two", priority=1, token="sk-or-v1-fleetKEY2BBBBBBBBBBBBBBBBBBBB02"),
    ]}))
    a = make_home(tmp_path, "a")
    assert hermes.select(POOL)["id"] == "aaaaaa"        # negative control: before the bench
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(tmp_home, redis_server.url, "host-b")
    try:
        bench(a, time.time() + 900)
        assert wait_for(lambda: row(tmp_home)["last_status"] == "exhausted", timeout=BOUND)
        assert hermes.select(POOL)["id"] == "bbbbbb"
        until = hermes.exhausted_until(POOL)["aaaaaa"]
        assert until is not None and until > time.time() + 800
    finally:
        da.close()
        db.close()


def test_no_echo_loop_and_fleet_status_shows_hosts_and_holders(tmp_path, redis_server):
    import json
    import subprocess

    from store.fleet.client import FleetClient, connect
    from tests.conftest import HERMES_ADMIN

    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, redis_server.url, "host-a"), Daemon(b, redis_server.url, "host-b")
    viewer = FleetClient(connect(redis_server.url), "viewer")
    try:
        bench(a, time.time() + 600)
        assert wait_for(lambda: row(b)["last_status"] == "exhausted", timeout=BOUND)
        version = viewer.version()
        goal = (da.sync.stats.reconciles + 3, db.sync.stats.reconciles + 3)
        assert wait_for(lambda: (da.sync.stats.reconciles, db.sync.stats.reconciles) >= goal, timeout=BOUND)
        assert viewer.version() == version        # B's applied bench was not published back as news
        assert (da.sync.stats.applied, db.sync.stats.applied) == (0, 1)
        out = subprocess.run([str(HERMES_ADMIN), "fleet", "status", "--json", "--redis", redis_server.url],
                             capture_output=True, text=True, timeout=60, env=env_without_secrets())
        snap = json.loads(out.stdout)
        assert {h["name"] for h in snap["hosts"]} == {"host-a", "host-b"}
        assert all(h["connected"] and h["lag_versions"] == 0 for h in snap["hosts"])
        key = next(k for k in snap["keys"] if k["fp"] == fkeys.full(FP_1))   # the form `fleet bench` takes
        assert key["status"] == "exhausted" and key["benched"] and key["host"] == "host-a"
        assert set(key["holders"]) == {"host-a", "host-b"}
        text = subprocess.run([str(HERMES_ADMIN), "fleet", "status", "--redis", redis_server.url],
                              capture_output=True, text=True, timeout=60, env=env_without_secrets()).stdout
        assert "host-a" in text and fkeys.short(FP_1) in text and "benched until" in text
    finally:
        da.close()
        db.close()
