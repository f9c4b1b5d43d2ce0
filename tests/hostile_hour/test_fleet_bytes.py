"""Hostile hour: a peer writes bytes that are not UTF-8 into the fleet's Redis keys.

RELIABILITY 35 and 45: wrong values in any Redis key are a notice, and no loop stops. The
forged-data suite forged only UTF-8 text; one byte 0xff in one field of one key's state
hash made every read of the fleet raise UnicodeDecodeError: the sync daemon's main loop
failed on every pass ("internal error in the main loop", no key synced at all, for every
key of every host), ``fleet status`` exited 1 with "internal error", and a non-UTF-8
pub/sub message threw the subscriber into its resubscribe back-off. The client now decodes
with replacement, so such text reaches the checks at the edge like any other bad value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from store.fleet import client as fclient
from store.fleet import keys as fkeys
from store.fleet.client import FleetClient, connect
from tests.conftest import run_cli
from tests.fleet_helpers import BOUND, KEY_1, SECRET, Daemon, make_home, row
from tests.hermes_real import wait_for

NS = "hermes-admin:fleet:"
FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)

pytestmark = pytest.mark.slow


def _poison(url: str) -> None:
    raw = redis.Redis.from_url(url)                  # bytes in, as any peer could
    raw.hset(NS + "s:" + FP_1, mapping={"status": b"exhausted", "reason": b"\xff\xfe\xfd",
                                        "host": b"host-\xff"})
    raw.hset(NS + "host:host-z", mapping={"heartbeat_at": b"\xff", "offset": b"\xc3"})
    raw.sadd(NS + "hosts", b"host-z", b"\xff\xfe")
    raw.publish(NS + "events", b"\xff\xfe not utf-8")


def test_the_daemon_keeps_syncing_through_non_utf8_values(tmp_path: Path, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    daemon = Daemon(home, redis_server.url, "host-a", interval=0.5)
    try:
        _poison(redis_server.url)
        passes = daemon.sync.stats.reconciles
        assert wait_for(lambda: daemon.sync.stats.reconciles >= passes + 3, timeout=BOUND)
        b = FleetClient(connect(redis_server.url), "host-b")
        b.clear(FP_1)
        assert b.mark(FP_1, until_in=600, code=429, reason="rate_limit_exceeded")[0] == "applied"
        assert wait_for(lambda: row(home)["last_status"] == "exhausted", timeout=BOUND), \
            list(daemon.sync.stats.errors)
        assert daemon.sync.stats.internal == 0, daemon.sync.stats.errors
    finally:
        daemon.close()


def test_fleet_status_reads_non_utf8_values(tmp_path: Path, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    _poison(redis_server.url)
    proc = run_cli(home, "fleet", "status", "--json", "--redis", redis_server.url, ok=False, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    json.loads(proc.stdout)


def test_negative_control_strict_decoding_stops_the_reads(tmp_path: Path, redis_server: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The client as it was (strict UTF-8): the same bytes raise on a plain state read."""
    _poison(redis_server.url)

    def strict(url: str, *, timeout: float = fclient.SOCKET_TIMEOUT) -> redis.Redis:
        return redis.Redis.from_url(url, socket_timeout=timeout, decode_responses=True)

    monkeypatch.setattr(fclient, "connect", strict)
    with pytest.raises(UnicodeDecodeError):
        FleetClient(fclient.connect(redis_server.url), "host-b").states([FP_1])
