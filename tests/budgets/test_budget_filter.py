"""The budget filter in the one eligibility check (#29), on a chain in this process: window
caps from the headroom readings, words and reset times, the reserve hold, the property that a
key is refused exactly when its known cost reaches its limit, and the negative controls (the
filter taken out: the over-budget key serves again)."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.config.budgets import Limits, PoolBudget
from store.dialects.readings import Reading
from store.pools.view import row_fingerprint
from store.proxy.routing import eligibility
from store.proxy.routing.chain import Chain
from store.proxy.routing.eligibility import BUDGET, Ask, why
from store.usage.record import ACTUAL, Spent
from store.usage.tally import DAY, Tally, resets
from tests.budgets.conftest import budgets
from tests.proxy_helpers import edge_seed


def chain_on(home, text, keys=2):
    edge_seed(home, "http://127.0.0.1:9", keys=keys, fallback=False)
    budgets(home, text)
    chain = Chain(home, "openrouter", env={})
    chain.load()
    return chain


def picked(chain):
    return chain.select().selection.row_id


def reading(utilization, reset_in=3600.0, window="5h"):
    now = time.time()
    return Reading(window=window, source="anthropic-unified", read_at=now, utilization=utilization,
                   reset_at=now + reset_in)


def record(chain, rid, *readings):
    row = next(r for r in chain._rows["openrouter"] if r["id"] == rid)
    chain.headroom.room.record("openrouter", rid, row_fingerprint("openrouter", row, chain.env), readings)


def spend(chain, rid, cost):
    chain.eligibility.budgets.tally(Spent(at=time.time(), pool="openrouter", row_id=rid, fingerprint=None,
                                          cost_usd=cost, cost_status=ACTUAL))


@pytest.mark.parametrize(("use", "expected"), [(0.85, "or1edg"), (0.80, "or1edg"), (0.5, "or0edg")])
def test_a_window_at_its_cap_is_skipped(tmp_home, use, expected):
    chain = chain_on(tmp_home, "openrouter:\n  cap: {5h: 80%, 7d: 90%}")
    record(chain, "or0edg", reading(use))
    assert picked(chain) == expected


def test_a_stale_window_reading_caps_nothing(tmp_home):
    chain = chain_on(tmp_home, "openrouter:\n  cap: {5h: 80%}")
    record(chain, "or0edg", reading(0.99, reset_in=-10))
    assert picked(chain) == "or0edg"


def test_a_cap_is_named_with_its_window_and_reset(tmp_home):
    chain = chain_on(tmp_home, "openrouter:\n  cap: {7d: 90%}")
    record(chain, "or0edg", reading(0.95, window="7d"))
    states = chain.states()[0][2]
    refusal = states[0][1]
    assert refusal.filter == BUDGET and refusal.until == pytest.approx(time.time() + 3600, abs=5)
    assert refusal.words.startswith("over its cap: 7d window at 95%, cap 90%, resets ")
    assert states[1][1] is None


def test_why_names_every_budget_and_says_over_budget(tmp_home):
    chain = chain_on(tmp_home, "openrouter:\n  key: {day: 1, month: 5}")
    spend(chain, "or0edg", 1.0)
    spend(chain, "or1edg", 0.5)
    assert picked(chain) == "or1edg"
    spend(chain, "or1edg", 0.5)
    assert chain.select() is None
    kind, parts = why(("openrouter", checks) for _i, _r, checks in chain.states())
    assert kind == "over_budget"
    assert parts == ["openrouter: over budget: $1.00 a day, resets 00:00 UTC (2 keys)"]
    until = chain.states()[0][2][0][1].until
    assert until == resets(DAY, time.time())


def test_control_the_filter_taken_out_the_key_over_budget_serves(tmp_home, monkeypatch):
    chain = chain_on(tmp_home, "openrouter:\n  key: {day: 1}")
    spend(chain, "or0edg", 1.0)
    assert picked(chain) == "or1edg"
    monkeypatch.setattr(eligibility.Eligibility, "hold", lambda self, pool, now, *_a: None)
    monkeypatch.setattr(eligibility.Eligibility, "budget", lambda self, ask, row, eff: None)
    chain._generation += 1
    assert picked(chain) == "or0edg"


def test_a_chosen_row_gone_over_budget_is_no_longer_usable(tmp_home):
    chain = chain_on(tmp_home, "openrouter:\n  key: {day: 1}")
    sel = chain.select().selection
    assert chain.usable(sel)
    spend(chain, sel.row_id, 1.0)
    assert not chain.usable(sel)
    # the agent's rules' rotation never hands it out either
    row = next(r for r in chain._rows["openrouter"] if r["id"] == sel.row_id)
    assert not chain.eligibility.upstream_open("openrouter", time.time)(row)


def test_reserve_by_label_and_alone_it_serves(tmp_home):
    chain = chain_on(tmp_home, "openrouter:\n  reserve: [or1edg]\n  key: {day: 1}")
    for row in chain._rows["openrouter"]:
        row["label"] = f"label-{row['id']}"
    assert picked(chain) == "or0edg"
    spend(chain, "or0edg", 1)
    assert picked(chain) == "or1edg"          # the reserve, once no other key may serve


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(costs=st.lists(st.floats(min_value=0, max_value=50, allow_nan=False), max_size=8),
       limit=st.floats(min_value=0.01, max_value=100, allow_nan=False))
def test_refused_exactly_when_known_cost_reaches_the_limit(tmp_home, costs, limit):
    chain = chain_on(tmp_home, None)
    el = chain.eligibility
    el.budgets.budgets = {"openrouter": PoolBudget(key=Limits(day=limit))}
    el.budgets.tally = Tally()
    for c in costs:
        spend(chain, "or0edg", c)
    rows = chain._rows["openrouter"]
    refusal = el.check(Ask("openrouter", rows, time.time()), rows[0])
    total = el.budgets.tally.key("openrouter", "or0edg", DAY, time.time())
    assert (refusal is not None and refusal.filter == BUDGET) == (total >= limit)
