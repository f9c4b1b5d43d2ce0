"""The reserve rule in a pick (:meth:`BudgetRules.held`), with the headroom gate's holds: a
reserve row serves only when no other row may serve. An ordinary row under a soft hold (at
its threshold, or its count spent by requests in flight) is still usable: it serves before
the reserve. One out by its headroom (exhausted) is not: then the reserve serves. Pure: a
fake gate with the gate's own rule (:func:`store.agent.headroom.held_back`). Negative control:
the reserve rule taken out, the soft-held row yields to the reserve."""

from __future__ import annotations

from store.agent.headroom import Hold, held_back
from store.config.budgets import Limits, PoolBudget
from store.proxy.routing import budget_rules
from store.proxy.routing.budget_rules import BudgetRules
from store.usage.tally import Tally
from tests.conftest import make_row

T = 1_800_000_000.0
R = make_row("r0", token="sk-or-v1-" + "r" * 40, priority=0)          # the reserve
N = make_row("n1", token="sk-or-v1-" + "n" * 40, priority=1)
M = make_row("m2", token="sk-or-v1-" + "m" * 40, priority=2)


def rules(**budget) -> BudgetRules:
    return BudgetRules({"p": PoolBudget(reserve=("r0",), **budget)}, Tally(lambda: T), None, {})


def gate(holds: dict[str, Hold]):
    """The headroom gate's answer for the rows asked about (its soft/hard rule)."""
    return lambda rows: held_back(holds, [str(r["id"]) for r in rows])


SOFT, HARD = Hold(T + 60, False, None), Hold(T + 60, True, None)


def test_a_soft_held_row_serves_before_the_reserve():
    got = rules().held("p", [R, N], T, headroom=gate({"n1": SOFT}))
    assert "r0" in got and "n1" not in got


def test_a_soft_hold_still_yields_to_a_free_ordinary_row():
    got = rules().held("p", [R, N, M], T, headroom=gate({"n1": SOFT}))
    assert set(got) == {"r0", "n1"}


def test_the_reserve_serves_when_every_other_row_is_out():
    got = rules().held("p", [R, N], T, headroom=gate({"n1": HARD}))
    assert set(got) == {"n1"}
    assert rules().held("p", [R], T) == frozenset()       # nothing else at all


def test_the_reserve_serves_when_the_others_are_over_budget():
    r = rules(key=Limits(day=1.0))
    r.tally.add("p", "n1", 1.0, T)
    assert set(r.held("p", [R, N], T)) == {"n1"}
    assert set(r.held("p", [R, N, M], T)) == {"n1", "r0"}


def test_control_the_reserve_rule_taken_out_the_reserve_serves_first(monkeypatch):
    monkeypatch.setattr(budget_rules.BudgetRules, "reserve_ids", lambda self, *a: frozenset())
    got = rules().held("p", [R, N], T, headroom=gate({"n1": SOFT}))
    assert "r0" not in got and "n1" in got        # the soft-held ordinary row yields: the reserve serves
