"""Fleet sync between hosts through a real redis-server (store.fleet, `fleet sync`).

Each test runs two or three in-process sync daemons on separate homes against a real
redis-server on a loopback port, writes the way Hermes and hermes-admin do, and waits
(bounded polling) for the other homes' files to show the result.
"""

from __future__ import annotations

import time

import pytest

from store import actions, policy
from store.fleet import keys as fkeys
from store.transaction import transaction

from .conftest import read_doc
from .fleet_helpers import BOUND, KEY_1, POOL, SECRET, Daemon, RedisServer, make_home
from .hermes_real import wait_for

pytestmark = pytest.mark.slow

FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)


@pytest.fixture
def server(tmp_path):
    d = tmp_path / "redis"
    d.mkdir()
    srv = RedisServer(d)
    yield srv
    srv.stop()


def row(home, rid="aaaaaa"):
    return next(r for r in read_doc(home)["credential_pool"][POOL] if r["id"] == rid)


def bench(home, until_at, rid="aaaaaa", code=429):
    """What a Hermes agent does on a 429 with a provider reset time."""
    with transaction(home) as doc:
        rows = doc["credential_pool"][POOL]
        target = next(r for r in rows if r["id"] == rid)
        policy.mark_exhausted(rows, target, time.time(), code=code, reason="rate_limit_exceeded",
                              message=f"quota hit for {KEY_1}", reset_at=until_at)


def reset(home, rid="aaaaaa"):
    with transaction(home) as doc:
        actions.reset(doc, POOL, rid, time.time())


def test_bench_on_a_reaches_b_and_reset_on_b_clears_a(tmp_path, server):
    a, b = make_home(tmp_path, "a"), make_home(tmp_path, "b")
    da, db = Daemon(a, server.url, "host-a"), Daemon(b, server.url, "host-b")
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
