"""Month budgets across the fleet (#29) on a real redis-server: a key's month total on a host
is the sum of this month's per-day hashes of every host (read off the request path, on the
fleet usage thread), so a month budget holds across hosts. Controls: without a sync each
host sees only its own month; the previous month's days never count."""

from __future__ import annotations

import calendar
import time

import pytest
import redis

from store.fleet.client import connect
from store.fleet.usage import TTL_S, FleetUsage, hash_key
from store.paths import Home
from store.proxy.routing.chain import Chain
from store.usage.record import ACTUAL, Spent
from store.usage.tally import DAY, MONTH, Tally, day_of, starts
from tests.budgets.conftest import budgets
from tests.proxy_helpers import edge_seed

pytestmark = pytest.mark.slow

POOL, ROW = "openrouter", "or0edg"
NOW = float(calendar.timegm((2026, 3, 20, 12, 0, 0)))       # a fixed day: the 20th, 19 earlier days


def host(root, name: str, url: str, text: str) -> tuple[Chain, FleetUsage]:
    """One host: a home of two keys with *text* as its budgets, its chain and fleet usage."""
    (root / name).mkdir()
    home = Home(root / name)
    edge_seed(home, "http://127.0.0.1:9", keys=2, fallback=False)
    budgets(home, text)
    chain = Chain(home, POOL, env={})
    chain.load()
    return chain, FleetUsage(connect(url), chain.eligibility.budgets.tally, lambda: [POOL])


def spend(chain: Chain, usd: float, when: float | None = None) -> None:
    chain.eligibility.budgets.tally(Spent(at=time.time() if when is None else when, pool=POOL, row_id=ROW,
                                          fingerprint=None, cost_usd=usd, cost_status=ACTUAL))


def picked(chain: Chain) -> str:
    chain._generation += 1          # a new pick, not the one the chain remembers
    return chain.select().selection.row_id


def at(day: int, hour: int = 12) -> float:
    return float(calendar.timegm((2026, 3 if day > 0 else 2, day if day > 0 else 28 + day, hour, 0, 0)))


def costs(tally: Tally, when: float, usd: float, row: str = ROW) -> None:
    tally(Spent(at=when, pool=POOL, row_id=row, fingerprint=None, cost_usd=usd, cost_status=ACTUAL))


def pair(url: str, **kw) -> tuple[Tally, FleetUsage, Tally, FleetUsage, list[str]]:
    notices: list[str] = []
    a, b = Tally(clock=lambda: NOW), Tally(clock=lambda: NOW)
    fa = FleetUsage(connect(url), a, lambda: [POOL], notice=notices.append, **kw)
    fb = FleetUsage(connect(url), b, lambda: [POOL], notice=notices.append, **kw)
    return a, fa, b, fb, notices


def test_a_keys_month_is_the_fleets_sum_of_this_months_days(redis_server) -> None:
    a, fa, b, fb, notices = pair(redis_server.url)
    costs(b, at(1, 0), 3.0)             # the month's very first hour
    costs(b, at(10), 4.0)
    costs(b, at(0), 100.0)              # 28 February: the previous month
    costs(a, NOW, 1.0)
    costs(a, NOW, 0.5, row="or1edg")
    assert fb.sync() and fa.sync() and fb.sync()
    for t in (a, b):
        assert t.key(POOL, ROW, MONTH, NOW) == pytest.approx(8.0)
        assert t.key(POOL, ROW, DAY, NOW) == pytest.approx(1.0)
        assert t.pool(POOL, MONTH, NOW) == pytest.approx(8.5)
        assert t.spenders(POOL, NOW)[ROW] == pytest.approx((1.0, 8.0))
    costs(a, NOW, 2.0)                  # spent since the last sync counts at once on this host
    assert a.key(POOL, ROW, MONTH, NOW) == pytest.approx(10.0)
    assert not notices
    r = redis.Redis.from_url(redis_server.url, decode_responses=True)
    first = hash_key(POOL, day_of(at(1)))
    assert float(r.hget(first, ROW)) == 3.0 and r.ttl(first) > 31 * 86400      # still there on the 31st


def test_control_without_a_sync_each_host_sees_only_its_own_month(redis_server) -> None:
    a, _fa, b, _fb, _ = pair(redis_server.url)
    costs(b, at(1, 0), 3.0)
    costs(b, at(10), 4.0)
    costs(a, NOW, 1.0)
    assert a.key(POOL, ROW, MONTH, NOW) == pytest.approx(1.0)
    assert b.key(POOL, ROW, MONTH, NOW) == pytest.approx(7.0)


def test_a_lost_hash_never_lowers_what_this_host_knows(redis_server) -> None:
    a, fa, _b, _fb, _ = pair(redis_server.url)
    costs(a, at(5), 6.0)
    assert fa.sync()
    redis.Redis.from_url(redis_server.url).flushall()
    assert fa.sync()
    assert a.key(POOL, ROW, MONTH, NOW) == pytest.approx(6.0)


def test_earlier_days_are_read_again_within_month_every_syncs(redis_server) -> None:
    """A late addition to an earlier day (a host catching up) is seen within month_every
    syncs; this host's own payment for an earlier day makes the next sync read the month."""
    a, fa, b, fb, _ = pair(redis_server.url, month_every=3)
    assert fa.sync()
    r = redis.Redis.from_url(redis_server.url, decode_responses=True)
    r.hincrbyfloat(hash_key(POOL, day_of(at(3))), ROW, 2.5)
    seen = []
    for _ in range(3):
        assert fa.sync()
        seen.append(a.key(POOL, ROW, MONTH, NOW))
    assert seen[-1] == pytest.approx(2.5) and seen[0] == 0.0
    costs(b, at(19), 1.0)               # yesterday, paid by b: b reads the month in that sync
    assert fb.sync() and b.key(POOL, ROW, MONTH, NOW) == pytest.approx(3.5)


def test_hostile_values_in_an_earlier_day_are_dropped_with_a_notice(redis_server) -> None:
    a, fa, _b, _fb, notices = pair(redis_server.url)
    r = redis.Redis.from_url(redis_server.url, decode_responses=True)
    r.hset(hash_key(POOL, day_of(at(4))), mapping={ROW: "inf", "or1edg": "-1", "no id!": "5", "ok0001": "0.25"})
    r.set(hash_key(POOL, day_of(at(6))), "a string, not a hash")
    assert fa.sync()
    assert a.key(POOL, ROW, MONTH, NOW) == 0.0 and a.key(POOL, "ok0001", MONTH, NOW) == 0.25
    assert fa.dropped == 4 and all("dropped from Redis" in n for n in notices)


def test_hash_lifetime_covers_a_month() -> None:
    """The 1st's hash is read until the 31st ends: it must outlive 31 days after its last addition."""
    assert TTL_S > 31 * 86400


def test_two_hosts_hold_one_month_budget(tmp_path, redis_server) -> None:
    """Through the budget filter of two chains (two homes: two hosts): host b's spend early
    in the month and host a's today together pass key #1's month budget, so a moves to key #2."""
    text = "openrouter:\n  key: {month: 5}"
    a, fa = host(tmp_path, "a", redis_server.url, text)
    b, fb = host(tmp_path, "b", redis_server.url, text)
    spend(b, 3.0, starts(MONTH, time.time()) + 60)         # the month's first minute
    spend(a, 2.5)
    assert picked(a) == ROW and picked(b) == ROW             # each alone is under $5 this month
    assert fb.sync() and fa.sync()
    assert a.eligibility.budgets.tally.key(POOL, ROW, MONTH, time.time()) == pytest.approx(5.5)
    assert picked(a) == "or1edg"


def test_control_two_hosts_without_the_sync_each_stay_on_key_one(tmp_path, redis_server) -> None:
    text = "openrouter:\n  key: {month: 5}"
    a, _fa = host(tmp_path, "a", redis_server.url, text)
    b, _fb = host(tmp_path, "b", redis_server.url, text)
    spend(b, 3.0, starts(MONTH, time.time()) + 60)
    spend(a, 2.5)
    assert picked(a) == ROW


def test_control_without_the_earlier_days_read_only_today_is_shared(redis_server, monkeypatch) -> None:
    """Negative control: the month's earlier days not read back (today's behaviour before
    #29's month budgets), host a's month is its own plus the fleet's today only."""
    monkeypatch.setattr(FleetUsage, "_earlier_days", lambda self, today, owed: None)
    a, fa, b, fb, _ = pair(redis_server.url)
    costs(b, at(1, 0), 3.0)
    costs(b, at(10), 4.0)
    costs(b, NOW, 0.5)
    costs(a, NOW, 1.0)
    assert fb.sync() and fa.sync()
    assert a.key(POOL, ROW, MONTH, NOW) == pytest.approx(1.5)
