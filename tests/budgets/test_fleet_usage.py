"""The fleet's usage counters (#29) on a real redis-server: two hosts (two homes, two
proxies' chains) share a key's day total, and the budget holds across them; a host that
cannot reach Redis keeps counting and catches up; what Redis holds names no secret; hostile
values read back are dropped."""

from __future__ import annotations

import time

import pytest
import redis

from store.fleet.client import connect
from store.fleet.usage import FleetUsage, hash_key
from store.paths import Home
from store.proxy.routing.chain import Chain
from store.usage.record import ACTUAL, Spent
from store.usage.tally import DAY, day_of
from tests.budgets.conftest import ask, budgets, costing
from tests.fleet_helpers import RedisServer, dump_redis
from tests.hermes_real import wait_for
from tests.proxy.upstream import ScriptedUpstream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path):
    s = RedisServer(tmp_path)
    yield s
    s.stop()


def host(root, name, url, text="openrouter:\n  key: {day: 1.50}"):
    (root / name).mkdir()
    home = Home(root / name)
    edge_seed(home, "http://127.0.0.1:9", keys=2, fallback=False)
    budgets(home, text)
    chain = Chain(home, "openrouter", env={})
    chain.load()
    tally = chain.eligibility.budgets.tally
    notices: list[str] = []
    return chain, FleetUsage(connect(url), tally, lambda: ["openrouter"], notice=notices.append), notices


def spend(chain, rid, cost):
    chain.eligibility.budgets.tally(Spent(at=time.time(), pool="openrouter", row_id=rid, fingerprint=None,
                                          cost_usd=cost, cost_status=ACTUAL))


def picked(chain):
    chain._generation += 1
    return chain.select().selection.row_id


def test_two_hosts_share_a_keys_day_total_and_the_budget_holds(tmp_path, server):
    a, fa, _ = host(tmp_path, "a", server.url)
    b, fb, _ = host(tmp_path, "b", server.url)
    spend(a, "or0edg", 1.00)
    spend(b, "or0edg", 0.75)
    assert picked(a) == "or0edg" and picked(b) == "or0edg"    # each alone is under $1.50
    assert fa.sync() and fb.sync() and fa.sync()
    now = time.time()
    for chain in (a, b):
        assert chain.eligibility.budgets.tally.key("openrouter", "or0edg", DAY, now) == pytest.approx(1.75)
        assert picked(chain) == "or1edg"                       # over $1.50 across the fleet
    r = redis.Redis.from_url(server.url, decode_responses=True)
    key = hash_key("openrouter", day_of(now))
    assert float(r.hget(key, "or0edg")) == pytest.approx(1.75)
    assert 34 * 86400 < r.ttl(key) <= 35 * 86400
    text = dump_redis(r)
    assert not any(k in text or k[-8:] in text for k in EDGE_KEYS)     # row ids only


def test_control_without_the_fleet_each_host_sees_only_its_own(tmp_path, server):
    a, _fa, _ = host(tmp_path, "a", server.url)
    b, _fb, _ = host(tmp_path, "b", server.url)
    spend(a, "or0edg", 1.00)
    spend(b, "or0edg", 0.75)
    assert picked(a) == "or0edg" and picked(b) == "or0edg"    # the budget does not hold across hosts


def test_a_host_that_cannot_reach_redis_counts_locally_and_catches_up(tmp_path, server):
    a, fa, notices = host(tmp_path, "a", server.url)
    b, fb, _ = host(tmp_path, "b", server.url)
    spend(a, "or0edg", 0.5)
    assert fa.sync()
    server.kill()
    spend(a, "or0edg", 0.5)
    spend(a, "or0edg", 0.25)
    assert not fa.sync() and not fa.sync()
    assert len(notices) == 1 and "cannot be reached" in notices[0]
    assert a.eligibility.budgets.tally.key("openrouter", "or0edg", DAY, time.time()) == pytest.approx(1.25)
    server.start()                                             # a fresh server: the earlier $0.50 is gone
    spend(b, "or0edg", 0.5)
    assert fb.sync() and fa.sync() and fb.sync()
    assert "caught up ($0.7500 added)" in notices[-1]
    assert b.eligibility.budgets.tally.key("openrouter", "or0edg", DAY, time.time()) == pytest.approx(1.25)
    assert picked(b) == "or0edg"                               # 1.25 < 1.50
    spend(b, "or0edg", 0.25)
    assert picked(b) == "or1edg"


def test_hostile_values_in_redis_are_dropped_with_a_notice(tmp_path, server):
    a, fa, notices = host(tmp_path, "a", server.url)
    r = redis.Redis.from_url(server.url, decode_responses=True)
    key = hash_key("openrouter", day_of(time.time()))
    r.hset(key, mapping={"or0edg": "nan", "or1edg": "-5", "bad id with spaces": "1", "ok0001": "0.5"})
    assert fa.sync()
    tally = a.eligibility.budgets.tally
    assert tally.key("openrouter", "or0edg", DAY, time.time()) == 0.0
    assert tally.key("openrouter", "ok0001", DAY, time.time()) == 0.5
    assert fa.dropped == 3 and all("dropped from Redis" in n for n in notices)
    r.delete(key)
    r.set(key, "a string, not a hash")
    spend(a, "or0edg", 0.25)
    assert fa.sync()           # a WRONGTYPE reply fails that command alone
    assert fa.tally.owed() == {("openrouter", "or0edg", day_of(time.time())): 0.25}    # kept to add again
    r.delete(key)
    assert fa.sync() and fa.tally.owed() == {}
    assert float(r.hget(key, "or0edg")) == 0.25


def test_two_running_proxies_hold_one_budget_across_hosts(tmp_path, server):
    """Two proxies (two homes: two hosts) with --fleet's counters on one redis-server: key #1's
    day total is shared, so the second proxy moves to key #2 once their sum reaches the budget."""

    with ScriptedUpstream() as up:
        up.script(None, costing(1.0))
        homes = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            homes.append(Home(tmp_path / name))
            edge_seed(homes[-1], up.url, keys=2, fallback=False)
            budgets(homes[-1], "openrouter:\n  key: {day: 2.00}")
        with running_chain_proxy(homes[0]) as pa, running_chain_proxy(homes[1]) as pb:
            halts = [FleetUsage(connect(server.url), p.chain.eligibility.budgets.tally, lambda: ["openrouter"]
                                ).start(interval=0.05) for p in (pa, pb)]
            try:
                assert ask(pa)[1] == "or0edg"
                assert ask(pb)[1] == "or0edg"                  # $1 on each host: $2 in the fleet
                tb = pb.chain.eligibility.budgets.tally
                assert wait_for(lambda: tb.key("openrouter", "or0edg", DAY, time.time()) >= 2.0, timeout=10)
                assert ask(pb)[1] == "or1edg"
                ta = pa.chain.eligibility.budgets.tally
                assert wait_for(lambda: ta.key("openrouter", "or0edg", DAY, time.time()) >= 2.0, timeout=10)
                assert ask(pa)[1] == "or1edg"
            finally:
                for halt in halts:
                    halt()

