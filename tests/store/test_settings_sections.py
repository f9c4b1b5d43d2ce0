"""hermes-admin.yaml's budgets:, usage: and proxy: sections: read strictly, every error names
the field, hostile values never pass and never crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.config import settings
from store.errors import ConfigUnreadable

PATH = Path("hermes-admin.yaml")


def test_the_issue_examples_read() -> None:
    got = settings.parse({
        "budgets": {"openrouter": {"key": {"day": 2.00, "month": 40}, "pool": {"day": 10}, "reserve": ["or0003"]},
                    "anthropic": {"cap": {"5h": "80%", "7d": "90%"}}},
        "proxy": {"affinity": {"ttl": "5m", "max_share": 0.5}, "pace": {"max_wait": "2s"},
                  "hold": {"max_wait": "0s"}, "prefer": {"anthropic": "soonest_reset"}},
        "usage": {"keep_requests": "7d", "prices": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}}}, PATH)
    assert got.budgets["openrouter"].key.day == 2.0 and got.budgets["openrouter"].key.month == 40.0
    assert got.budgets["openrouter"].pool.of("day") == 10.0 and got.budgets["openrouter"].pool.month is None
    assert got.budgets["openrouter"].reserve == ("or0003",)
    assert got.budgets["anthropic"].cap == {"5h": 0.8, "7d": 0.9}
    assert got.proxy.affinity.ttl == 300.0 and got.proxy.affinity.max_share == 0.5
    assert got.proxy.pace_max_wait == 2.0 and got.proxy.hold_max_wait == 0.0
    assert got.proxy.prefer == {"anthropic": "soonest_reset"}
    assert got.usage.keep_requests == 7 * 86400 and got.usage.prices["gpt-4o-mini"]["output"] == 0.6


def test_absent_sections_are_the_defaults() -> None:
    got = settings.parse({}, PATH)
    assert got.budgets == {} and got.proxy.affinity.enabled and got.proxy.hold_max_wait == 0.0
    assert got.usage.ledger and got.usage.keep_hourly == 400 * 86400


@pytest.mark.parametrize(("doc", "field"), [
    ({"budgets": {"or": {"key": {"week": 1}}}}, "budgets.or.key.week"),
    ({"budgets": {"or": {"key": {"day": -1}}}}, "budgets.or.key.day"),
    ({"budgets": {"or": {"cap": {"5h": "180%"}}}}, "budgets.or.cap.5h"),
    ({"budgets": {"or": {"cap": {"1y": 0.5}}}}, "budgets.or.cap.1y"),
    ({"budgets": {"or": {"reserve": "or0003"}}}, "budgets.or.reserve"),
    ({"budgets": {"or": {"reserve": ["a\nb"]}}}, "budgets.or.reserve[0]"),
    ({"proxy": {"pace": {"max_wait": "2y"}}}, "proxy.pace.max_wait"),
    ({"proxy": {"hold": {"max_wait": "11m"}}}, "proxy.hold.max_wait"),
    ({"proxy": {"hold": {"max_waiting": 0}}}, "proxy.hold.max_waiting"),
    ({"proxy": {"affinity": {"enabled": "yes"}}}, "proxy.affinity.enabled"),
    ({"proxy": {"affinity": {"max_share": 2}}}, "proxy.affinity.max_share"),
    ({"proxy": {"prefer": {"anthropic": "fastest"}}}, "proxy.prefer.anthropic"),
    ({"usage": {"keep_hourly": True}}, "usage.keep_hourly"),
    ({"usage": {"prices": {"m": {"input": float("nan")}}}}, "usage.prices.m.input"),
    ({"usage": {"ledger": 1}}, "usage.ledger"),
])
def test_each_bad_value_names_its_field(doc: dict, field: str) -> None:
    with pytest.raises(ConfigUnreadable) as got:
        settings.parse(doc, PATH)
    assert f"{field}:" in str(got.value) and str(PATH) in str(got.value)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=12)


@given(section=st.sampled_from(["budgets", "usage", "proxy"]), value=VALUES)
def test_hostile_sections_are_refused_or_read_never_crash(section: str, value: object) -> None:
    try:
        got = settings.parse({section: value}, PATH)
    except ConfigUnreadable as exc:
        assert section in str(exc)
        return
    for budget in got.budgets.values():
        assert all(0.01 <= f <= 1.0 for f in budget.cap.values())
    assert 0.0 <= got.proxy.hold_max_wait <= 600.0 and 0.0 <= got.proxy.pace_max_wait <= 60.0
