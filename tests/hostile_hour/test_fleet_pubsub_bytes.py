"""Hostile hour: pub/sub messages that are not UTF-8, against a real ``redis-server``.

Checked after the fix for non-UTF-8 *values*: the subscriber shares the client's decoding
(replacement, not strict), so a message with bad bytes is a checked message like any other
bad one: one notice ("is not JSON; ignored" / "is not a fingerprint; ignored"), no "internal
error in the subscriber", no resubscribe back-off, and later good messages still apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from store.fleet import client as fclient
from store.fleet import keys as fkeys
from store.fleet.client import FleetClient, connect
from tests import fleet_helpers
from tests.fleet_helpers import BOUND, KEY_1, SECRET, Daemon, make_home, row
from tests.hermes_real import wait_for

NS = "hermes-admin:fleet:"
FP_1 = fkeys.fleet_fingerprint(SECRET, "token:" + KEY_1)
BAD = (b"\xff\xfe not utf-8", b'{"fp": "\xff\xc3"}')

pytestmark = pytest.mark.slow


def _publish_bad(url: str) -> None:
    raw = redis.Redis.from_url(url)                  # bytes in, as any peer could
    assert wait_for(lambda: raw.pubsub_numsub(NS + "events")[0][1] >= 1, timeout=BOUND), "no subscriber"
    for data in BAD:
        raw.publish(NS + "events", data)


def _said(daemon: Daemon) -> list[str]:
    return [m for m in list(daemon.sync.notices.recent) if m.startswith("message:")]


def test_bad_bytes_are_one_notice_each_and_the_subscriber_goes_on(tmp_path: Path, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    daemon = Daemon(home, redis_server.url, "host-a", interval=30)   # a long pass: the hint applies it
    try:
        _publish_bad(redis_server.url)
        assert wait_for(lambda: len(_said(daemon)) >= 2, timeout=BOUND), list(daemon.sync.notices.recent)
        said = _said(daemon)
        assert len(said) == 2 and "is not JSON; ignored" in said[0] and "not a fingerprint" in said[1], said
        assert daemon.sync.stats.internal == 0, daemon.sync.stats.errors
        assert not any("subscriber" in e for e in daemon.sync.stats.errors), daemon.sync.stats.errors
        b = FleetClient(connect(redis_server.url), "host-b")
        b.clear(FP_1)
        assert b.mark(FP_1, until_in=600, code=429, reason="rate_limit_exceeded")[0] == "applied"
        assert wait_for(lambda: row(home)["last_status"] == "exhausted", timeout=BOUND), \
            list(daemon.sync.stats.errors)
        assert daemon.sync.stats.internal == 0, daemon.sync.stats.errors
    finally:
        daemon.close()


def test_negative_control_strict_decoding_is_an_internal_error(tmp_path: Path, redis_server: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The client as it was (strict UTF-8): the same message throws the subscriber off."""
    def strict(url: str, *, timeout: float = fclient.SOCKET_TIMEOUT) -> redis.Redis:
        return redis.Redis.from_url(url, socket_timeout=timeout, decode_responses=True)

    monkeypatch.setattr(fleet_helpers, "connect", strict)
    home = make_home(tmp_path, "a")
    daemon = Daemon(home, redis_server.url, "host-a", interval=30)
    try:
        _publish_bad(redis_server.url)
        assert wait_for(lambda: any("internal error in the subscriber" in e for e in daemon.sync.stats.errors),
                        timeout=BOUND), list(daemon.sync.stats.errors)
    finally:
        daemon.close()
