"""``budget`` and ``burn_rate`` to the word, on one sample whose times are known: every
condition they raise (a key's day budget, a pool's month budget, a window cap, a window
burning out), with each field an alert delivers, the clock's next change, and the walk they
share (:mod:`store.monitor.keyed`): a rule switched off or narrowed to other pools raises
nothing."""

from __future__ import annotations

import json

import pytest

from store.agent.headroom import RowReadings
from store.config.budgets import Limits, PoolBudget
from store.dialects.readings import Reading
from store.monitor import budget, burn, keyed
from store.monitor import rules as R
from store.monitor.burn import BurnHistory
from store.monitor.conditions import Evaluation, utc
from store.pools.view import build_pools
from tests.conftest import make_row, make_store
from tests.monitor.samples import NOW
from tests.monitor.samples import sample as _sample

assert utc(NOW) == "2027-01-15 08:00:00 UTC"


def _sample_of() -> tuple:
    rows = [make_row("a", priority=0, label="main", token="sk-or-v1-" + "a" * 48),
            make_row("b", priority=1, token="sk-or-v1-" + "b" * 48)]
    views = build_pools(make_store({"openrouter": rows}), now=NOW)
    fps = {cv.id: cv.fingerprint for cv in views[0].credentials}
    five = Reading("5h", "anthropic-unified", NOW - 30, utilization=0.9, reset_at=NOW + 3600)
    headroom = {("openrouter", "a"): RowReadings(fps["a"], {"5h": five}),
                ("openrouter", "b"): RowReadings("sk-or-…old0", {"5h": five})}      # another secret: not read
    budgets = {"openrouter": PoolBudget(key=Limits(day=2.0), pool=Limits(month=40.0), cap={"5h": 1.0}),
               "gone": PoolBudget(pool=Limits(day=1.0))}                              # no such pool in the store
    spend = {("openrouter", "a", "day"): 1.7, ("openrouter", "b", "day"): 0.1,
             ("openrouter", None, "month"): 0.005, ("gone", None, "day"): 3.0}
    return _sample(rows, headroom=headroom, budgets=budgets, spend=spend), fps


def _rules(at: float = 0.8) -> R.Rules:
    base = R.defaults()
    return R.Rules({**base.rules, R.BUDGET: R.Rule(R.BUDGET, threshold=at)}, 0.3, 1, "test rules")


def _of_key_a(key: str, fp: str, title: str, text: str) -> dict:
    """What an alert about key ``a`` (``main``) of ``openrouter`` delivers."""
    return {"key": key, "rule": key.split("/")[0], "severity": "warning", "profile": "default", "pool": "openrouter",
            "id": "a", "label": "main", "fingerprint": fp, "title": title, "text": text}


def _budget(rules: R.Rules) -> Evaluation:
    sample, _fps = _sample_of()
    ev = Evaluation()
    budget.add(ev, sample, rules, NOW)
    return ev


def test_budget_conditions_to_the_word() -> None:
    ev = _budget(_rules())
    _sample, fps = _sample_of()
    who = f"default/openrouter #1 main ({fps['a']})"
    got = {k: c.to_json() for k, c in ev.conditions.items()}
    assert list(got) == ["budget/default/openrouter/a/cap-5h", "budget/default/openrouter/a/day",
                         "budget/default/gone/pool/day"]
    assert got["budget/default/openrouter/a/cap-5h"] == _of_key_a(
        "budget/default/openrouter/a/cap-5h", fps["a"], f"{who} at 90% of its 5h cap",
        f"{who} has used 90% of its 5h window (anthropic-unified), 90% of the 100% cap hermes-admin.yaml "
                "sets (this rule alerts at 80%); the window resets 2027-01-15 09:00:00 UTC.")
    assert got["budget/default/openrouter/a/day"] == _of_key_a(
        "budget/default/openrouter/a/day", fps["a"], f"{who} at 85% of its day budget",
        f"{who} spent $1.70 of its day budget of $2.00 (85%; this rule alerts at 80%); the day starts "
                "again 2027-01-16 00:00:00 UTC.")
    assert got["budget/default/gone/pool/day"] == {
        "key": "budget/default/gone/pool/day", "rule": "budget", "severity": "warning", "profile": "default",
        "pool": "gone", "id": None, "label": None, "fingerprint": None,
        "title": "default/gone at 300% of its day budget",
        "text": "Pool gone of profile default spent $3.00 of its day budget of $1.00 (300%; this rule alerts at "
                "80%); the day starts again 2027-01-16 00:00:00 UTC."}
    assert ev.next_change == NOW + 3600               # the cap's window resets before the day does


def test_a_pool_month_budget_at_any_share_and_a_sub_cent_spend() -> None:
    got = _budget(_rules(0.0))
    cond = got.conditions["budget/default/openrouter/pool/month"]
    assert cond.title == "default/openrouter at 0% of its month budget"
    assert cond.text == ("Pool openrouter of profile default spent $0.0050 of its month budget of $40.00 (0%; this "
                         "rule alerts at 0%); the month starts again 2027-02-01 00:00:00 UTC.")
    assert "budget/default/openrouter/b/day" in got.conditions          # at 0% every key with a spend alerts


def test_burn_rate_to_the_word() -> None:
    sample, fps = _sample_of()
    history = BurnHistory()
    for at, used in ((NOW - 1800, 0.5), (NOW - 30, 0.9)):
        history.observe("default", {("openrouter", "a"): RowReadings(
            fps["a"], {"5h": Reading("5h", "anthropic-unified", at, utilization=used, reset_at=NOW + 3600)})})
    ev = Evaluation()
    burn.add(ev, sample, R.defaults(), history, NOW)
    who = f"default/openrouter #1 main ({fps['a']})"
    (cond,) = ev.conditions.values()
    assert cond.to_json() == _of_key_a(
        "burn_rate/default/openrouter/a/5h", fps["a"], f"{who}: its 5h window runs out in 6m 53s",
        f"{who}: 90% of the 5h window used (anthropic-unified), growing 81.4% an hour: it runs out in 6m 53s "
                "(2027-01-15 08:06:52 UTC); the window resets 2027-01-15 09:00:00 UTC, within the 2h this rule "
                "allows.")


@pytest.mark.parametrize("off", ["disabled", "narrowed"])
def test_a_rule_off_or_narrowed_away_raises_nothing(off: str) -> None:
    """The shared walk: a rule switched off, or narrowed to another pool, walks no pool;
    control: the same sample under the rule as it is raises conditions."""
    sample, _fps = _sample_of()
    rule = R.Rule(R.BUDGET, enabled=off != "disabled", threshold=0.8, pools=frozenset({"elsewhere"}))
    assert list(keyed.pools_of(sample, rule, lambda p: p.budgets)) == []
    open_rule = R.Rule(R.BUDGET, threshold=0.8)
    walked = [(p.name, pool, pv is not None) for p, pool, pv in keyed.pools_of(sample, open_rule, lambda p: p.budgets)]
    assert walked == [("default", "openrouter", True), ("default", "gone", False)]
    assert json.dumps([pool for _p, pool, _pv in keyed.pools_of(sample, open_rule)]) == '["openrouter"]'
