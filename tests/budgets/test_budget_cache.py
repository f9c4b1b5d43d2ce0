"""The budget state a pick asks is worked out once and kept (#29's cost at 1,000-10,000 keys):
kept until the tally's generation for the pool moves, the UTC day or month turns, or the
view's generation moves (the reserve rows, named by label); and the kept round-robin lists
rotated in place give the same picks and the same rows as lists worked out afresh for every
pick. Negative controls: the cache never invalidated (a stale pick is seen), and the kept
list not rotated after a filtered pick (the picks diverge)."""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.config.budgets import Limits, PoolBudget
from store.paths import Home
from store.proxy.routing import budget_rules
from store.proxy.routing import chain as chain_mod
from store.proxy.routing.affinity import Conversation
from store.proxy.routing.chain import Chain
from store.proxy.routing.protocols import OPENAI, Want
from store.usage.record import ACTUAL, Spent
from store.usage.tally import Tally, resets
from tests.conftest import make_row, make_store, write_store

MIDNIGHT = 1_767_225_600.0          # 2026-01-01 00:00 UTC: a day and a month turn at once
T0 = MIDNIGHT - 30.0


def _keys(n: int) -> list[dict]:
    return [make_row(f"k{i:03d}", token=f"sk-or-v1-cache-{i:032d}", priority=i, label=f"key {i}",
                     base_url="http://127.0.0.1:9/api/v1") for i in range(n)]


def _chain(home: Home, n: int, strategy: str, clock: list[float], budget: PoolBudget) -> Chain:
    write_store(home, make_store({"openrouter": _keys(n)}))
    home.config.write_text(f"model:\n  provider: openrouter\n  default: m\n"
                           f"credential_pool_strategies:\n  openrouter: {strategy}\n")
    chain = Chain(home, "openrouter", env={}, clock=lambda: clock[0])
    chain.load()
    chain.eligibility.budgets.budgets = {"openrouter": budget}
    return chain


def _spend(chain: Chain, rid: str, cost: float, at: float) -> None:
    chain.eligibility.budgets.tally(Spent(at=at, pool="openrouter", row_id=rid, fingerprint=None,
                                          cost_usd=cost, cost_status=ACTUAL))


def _picked(chain: Chain) -> str | None:
    got = chain.select()
    return None if got is None else got.selection.row_id


# --- the tally's generation ------------------------------------------------------------------------

def test_the_tally_generation_moves_per_pool():
    t = Tally(clock=lambda: T0)
    assert t.generation("a") == 0
    t.add("a", "r1", 1.0, T0)
    assert (t.generation("a"), t.generation("b")) == (1, 0)
    t.settle({("b", "r9", int(T0 // 86400)): 0.0}, [(("b", "r9", int(T0 // 86400)), 3.0)])
    assert t.generation("b") >= 1 and t.generation("a") == 1
    before = t.generation("b")
    t.settle({}, [(("b", "r9", int(T0 // 86400)), 3.0)])      # the same total read again: nothing moved
    assert t.generation("b") == before


# --- what invalidates the kept state ---------------------------------------------------------------

def _stale_tally(home: Home) -> list[str]:
    """A key reaches its budget between two picks: the second pick must not use it."""
    clock = [T0 - 3600]
    chain = _chain(home, 3, "fill_first", clock, PoolBudget(key=Limits(day=1.0)))
    wrong = []
    if _picked(chain) != "k000":
        wrong.append("first pick")
    _spend(chain, "k000", 1.0, clock[0])
    if (got := _picked(chain)) != "k001":
        wrong.append(f"after k000 reached its budget: {got}")
    return wrong


def _stale_day(home: Home) -> list[str]:
    """Over its day budget at 23:59:30 UTC; past midnight the tally has not changed, yet the
    key serves again (the day's budget reset)."""
    clock = [T0]
    chain = _chain(home, 3, "fill_first", clock, PoolBudget(key=Limits(day=1.0)))
    _spend(chain, "k000", 1.5, T0)
    wrong = []
    if (got := _picked(chain)) != "k001":
        wrong.append(f"before midnight: {got}")
    clock[0] = resets("day", T0) + 1.0
    if (got := _picked(chain)) != "k000":
        wrong.append(f"after midnight: {got}")
    return wrong


def _stale_view(home: Home) -> list[str]:
    """The reserve is named by label: a store edit moves the label to another row, and the
    reserve hold follows it (the view's generation moved)."""
    clock = [T0 - 3600]
    chain = _chain(home, 2, "fill_first", clock, PoolBudget(reserve=("spare",)))
    doc = chain.last_doc
    wrong = []
    first = copy.deepcopy(doc)
    first["credential_pool"]["openrouter"][0]["label"] = "spare"
    chain.load_doc(first)
    if (got := _picked(chain)) != "k001":
        wrong.append(f"k000 the reserve: {got}")
    second = copy.deepcopy(doc)
    second["credential_pool"]["openrouter"][1]["label"] = "spare"
    chain.load_doc(second)
    if (got := _picked(chain)) != "k000":
        wrong.append(f"k001 the reserve: {got}")
    return wrong


@pytest.mark.parametrize("scenario", [_stale_tally, _stale_day, _stale_view])
def test_the_kept_budget_state_follows_every_change(tmp_home, scenario):
    assert scenario(tmp_home) == []


def test_the_state_is_worked_out_once_between_changes(tmp_home):
    clock = [T0 - 3600]
    chain = _chain(tmp_home, 50, "round_robin", clock, PoolBudget(key=Limits(day=1.0), reserve=("k001",)))
    for i in range(0, 50, 2):
        _spend(chain, f"k{i:03d}", 1.0, clock[0])
    rules = chain.eligibility.budgets
    _picked(chain)
    before = rules.worked_out
    picks = [_picked(chain) for _ in range(40)]
    assert rules.worked_out == before                      # 40 picks, no tally change: nothing re-worked
    assert all(int(p[1:]) % 2 == 1 and p != "k001" for p in picks)    # never over, never the reserve
    _spend(chain, "k003", 1.0, clock[0])
    assert _picked(chain) != "k003" and rules.worked_out == before + 1


def test_control_a_cache_never_invalidated_gives_stale_picks(tmp_home, monkeypatch, tmp_path_factory):
    """Negative control: the kept state taken as always fresh, and the reserve ids kept past
    a view change: each scenario above then sees a stale pick."""
    monkeypatch.setattr(budget_rules.BudgetRules, "fresh", lambda self, kept, pool, b, now: True)
    real = budget_rules.BudgetRules.reserve_ids

    def never_again(self, pool, b, rows, generation):
        got = self._reserve.get(pool)
        return got[1] if got is not None else real(self, pool, b, rows, generation)

    monkeypatch.setattr(budget_rules.BudgetRules, "reserve_ids", never_again)
    for scenario in (_stale_tally, _stale_day, _stale_view):
        home = Home(tmp_path_factory.mktemp("stale") / "home")
        home.root.mkdir(mode=0o700)
        assert scenario(home), f"{scenario.__name__}: a stale budget state went unnoticed"


# --- the kept lists against lists worked out afresh ------------------------------------------------

STEPS = st.lists(st.tuples(st.sampled_from(["pick", "pick", "pick", "spend", "avoid", "day", "conv", "conv"]),
                           st.integers(0, 11)), min_size=5, max_size=60)


def _run(home: Home, strategy: str, steps: list[tuple[str, int]], afresh: bool) -> list:
    clock = [T0 - 600]
    chain = _chain(home, 12, strategy, clock, PoolBudget(key=Limits(day=1.0), reserve=("k002", "key 7")))
    chain.rng = random.Random(3)
    rules = chain.eligibility.budgets
    for i in range(0, 12, 3):
        _spend(chain, f"k{i:03d}", 1.0, clock[0])
    out: list = []
    for what, n in steps:
        if afresh:          # the reference: every list and every budget state worked out again
            chain._usable.clear()
            rules._kept.clear()
            rules._reserve.clear()
            rules._union.clear()
        if what == "spend":
            _spend(chain, f"k{n:03d}", 0.5, clock[0])
        elif what == "day":
            clock[0] += 300.0          # crosses midnight after two such steps
        elif what == "conv":        # a conversation's turn: its pin is asked, and set by the 2xx
            raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"c{n % 4}"}]}).encode()
            want = Want(OPENAI, raw)
            want.conversation = Conversation(OPENAI, raw)
            got = chain.select(want=want)
            if got is not None:
                chain.success(got)
            out.append(None if got is None else got.selection.row_id)
        else:
            got = chain.select(avoid={("openrouter", f"k{n:03d}")} if what == "avoid" else None)
            out.append(None if got is None else got.selection.row_id)
    out.append([(r["id"], r["priority"], r.get("request_count")) for r in chain._rows["openrouter"]])
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, strategy=st.sampled_from(["round_robin", "fill_first", "random", "least_used"]))
def test_kept_lists_pick_what_fresh_lists_pick(tmp_path_factory, steps, strategy):
    homes = []
    for _ in range(2):
        home = Home(tmp_path_factory.mktemp("same") / "home")
        home.root.mkdir(mode=0o700)
        homes.append(home)
    assert _run(homes[0], strategy, steps, afresh=False) == _run(homes[1], strategy, steps, afresh=True)


def test_control_a_kept_list_not_rotated_diverges(tmp_path_factory, monkeypatch):
    """Negative control: the kept list left as it was after a round-robin pick among filtered
    rows (:func:`~store.proxy.routing.picks.rotated` made a no-op): the picks differ."""
    monkeypatch.setattr(chain_mod, "rotated", lambda usable, chosen: None)
    steps = [("pick", 0), ("avoid", 5)] * 8        # a tried row: the pick filters the kept list itself
    homes = []
    for _ in range(2):
        home = Home(tmp_path_factory.mktemp("rot") / "home")
        home.root.mkdir(mode=0o700)
        homes.append(home)
    assert _run(homes[0], "round_robin", steps, afresh=False) != _run(homes[1], "round_robin", steps, afresh=True)


# --- the view's rows by id (the forwarder's per-request questions) ---------------------------------

def _stale_auth_type(home: Home) -> list[str]:
    clock = [T0 - 3600]
    chain = _chain(home, 5, "round_robin", clock, PoolBudget())
    sel = chain.select().selection
    wrong = []
    if chain.auth_type(sel) != "api_key":
        wrong.append(f"before: {chain.auth_type(sel)}")
    doc = copy.deepcopy(chain.last_doc)
    next(r for r in doc["credential_pool"]["openrouter"] if r["id"] == sel.row_id)["auth_type"] = "oauth"
    chain.load_doc(doc)                   # the store changed: a new view (a new generation)
    if chain.auth_type(sel) != "oauth":
        wrong.append(f"after a store edit: {chain.auth_type(sel)}")
    return wrong


def test_the_row_index_follows_the_view(tmp_home):
    assert _stale_auth_type(tmp_home) == []


def test_control_a_row_index_never_rebuilt_is_stale(tmp_home, monkeypatch):
    from store.proxy.routing import overlay
    real = overlay.RowIndex.find
    monkeypatch.setattr(overlay.RowIndex, "find", lambda self, pool, rows, rid, generation: real(self, pool, (
        self._kept[pool][1] if pool in self._kept else rows), rid, 0))
    assert _stale_auth_type(tmp_home), "an index kept past a store edit went unnoticed"
