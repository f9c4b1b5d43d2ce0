"""May this row serve now: each filter of ``store.proxy.routing.eligibility``, value by value.

The proxy tests check the filters through requests; these pin each one's exact answer (its
name and the moment it lifts), the order a row is refused in, the predicates selection's
fast path takes (``keep``, ``hold``, ``upstream_open``) and the words of "why no key". The
headroom gate is a recording double here (its own tests are ``test_proxy_headroom.py`` and
``test_headroom_in_flight.py``): only what eligibility asks of it and passes on is tested.
Negative control: the last test turns the breaker's ``or`` fallback into the route's base
and sees the breaker test fail.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from store.config.budgets import Limits, PoolBudget
from store.config.settings import DEFAULTS as settings_defaults
from store.pools import generations, policy
from store.proxy.routing import eligibility as el
from store.proxy.routing.eligibility import Ask, Eligibility, Refusal, describe_refusals, why
from store.proxy.routing.upstreams import Breakers
from store.redaction.secret_ids import hash_secret
from tests.conftest import make_row
from tests.mutant import mutant

T = 1_700_000_000.0
POOL = "openrouter"
UP = "http://up.example/v1"
OTHER = "http://other.example/v1"


class Gate:
    """What eligibility asks a headroom gate, recorded; exhausted rows and holds by id (its
    settings: the defaults, no budget)."""

    settings = settings_defaults
    clock = staticmethod(time.time)

    def __init__(self, exhausted: dict[str, float] | None = None, holds: set[str] | None = None) -> None:
        self.exhausted = exhausted or {}
        self.holds = holds
        self.calls: list[tuple] = []

    def exhausted_until(self, pool, row, now, env):
        self.calls.append(("exhausted_until", pool, row["id"], now, env))
        return self.exhausted.get(row["id"])

    def holding(self, pool):
        return self.holds is not None and pool == POOL

    def held(self, pool, rows, now, env):
        self.calls.append(("held", pool, [r["id"] for r in rows], now, env))
        return set(self.holds or ())


def _row(rid: str, **fields: object) -> dict:
    return make_row(rid, token=f"sk-or-v1-elig-{rid}" + "0" * 24, **fields)


def _el(breakers: Breakers | None = None, gate: Gate | None = None, env: dict | None = None,
        ttls: policy.Ttls = policy.DEFAULT_TTLS) -> Eligibility:
    return Eligibility(breakers or Breakers(), gate or Gate(), env if env is not None else {}, lambda: ttls)


def _open(base: str = UP, at: float = T) -> Breakers:
    b = Breakers()
    b.failed(base, at, answered=False, what="connect")      # open until at + FIRST_OPEN (2 s)
    return b


# --- each filter ---------------------------------------------------------------------------------

def test_a_ready_row_passes_every_filter():
    gate = Gate()
    env = {"X": "1"}
    row = _row("a")
    assert _el(gate=gate, env=env).check(Ask(POOL, [row], T), row) is None
    assert gate.calls == [("exhausted_until", POOL, "a", T, env)]


def test_protocol_refuses_first():
    row = _row("a", last_status="dead")
    assert _el().check(Ask(POOL, [row], T, speaks=False), row) == Refusal("protocol", None)


def test_cooling_names_when_the_bench_lifts_and_dead_never():
    cooling = _row("a", last_status="exhausted", last_status_at=T - 100, last_error_code=429)
    dead = _row("b", last_status="dead")
    rows = [cooling, dead, _row("c")]           # not the only live row: no 60 s only-row cap
    e = _el()
    assert e.check(Ask(POOL, rows, T), cooling) == Refusal("cooling", T - 100 + 3600)
    assert e.check(Ask(POOL, rows, T), dead) == Refusal("dead", None)


def test_cooling_follows_the_ttls_the_check_is_given():
    row = _row("a", last_status="exhausted", last_status_at=T - 100, last_error_code=429)
    rows = [row, _row("b")]
    short = dataclasses.replace(policy.DEFAULT_TTLS, rate_limit_429=60.0)
    assert _el(ttls=short).check(Ask(POOL, rows, T), row) is None
    assert [r for _e, r in _el(ttls=short).checks(Ask(POOL, rows, T))] == [None, None]
    assert _el().check(Ask(POOL, rows, T), row) == Refusal("cooling", T - 100 + 3600)


def test_a_renewed_secret_is_judged_with_the_env():
    old, new = "sk-or-v1-" + "1" * 32, "sk-or-v1-" + "2" * 32
    row = make_row("a", source="env:ELIG_EXACT_KEY", secret_fingerprint=hash_secret(old),
                   last_status="exhausted", last_status_at=T - 10, last_error_code=429)
    admin = dataclasses.replace(policy.DEFAULT_TTLS, told=generations.Told("admin", "test"))
    rows = [row, _row("b")]
    assert _el(env={"ELIG_EXACT_KEY": new}, ttls=admin).check(Ask(POOL, rows, T), row) is None
    assert _el(env={"ELIG_EXACT_KEY": new}, ttls=admin).checks(Ask(POOL, rows, T))[0][1] is None
    assert _el(env={"ELIG_EXACT_KEY": old}, ttls=admin).check(Ask(POOL, rows, T), row) == \
        Refusal("cooling", T - 10 + 3600)
    assert _el(env={"ELIG_EXACT_KEY": old}, ttls=admin).checks(Ask(POOL, rows, T))[0][1] == \
        Refusal("cooling", T - 10 + 3600)


def test_model_refuses_only_the_scope_benched():
    row = _row("a", model_cooldowns={"m": T + 50, "n": T + 70},
               model_cooldown_observed_at={"m": T, "n": T})
    e = _el()
    assert e.check(Ask(POOL, [row], T, scope="m"), row) == Refusal("model", T + 50)
    assert e.check(Ask(POOL, [row], T, scope="n"), row) == Refusal("model", T + 70)
    assert e.check(Ask(POOL, [row], T, scope="o"), row) is None
    assert e.check(Ask(POOL, [row], T, scope=None), row) is None


def test_breaker_refuses_rows_on_an_open_upstream_until_it_reopens():
    e = _el(breakers=_open())
    on = _row("a", base_url=UP + "/")
    inference = _row("b", base_url=OTHER, inference_base_url=UP)
    off = _row("c", base_url=OTHER)
    routed = _row("d")
    rows = [on, inference, off, routed]
    assert e.check(Ask(POOL, rows, T), on) == Refusal("breaker", T + 2.0)
    assert e.check(Ask(POOL, rows, T), inference) == Refusal("breaker", T + 2.0)
    assert e.check(Ask(POOL, rows, T), off) is None
    assert e.check(Ask(POOL, rows, T, route_base=UP), routed) == Refusal("breaker", T + 2.0)
    assert e.check(Ask(POOL, rows, T), routed) is None           # the provider's own endpoint
    assert e.check(Ask(POOL, rows, T + 2.0), on) is None         # reopened
    assert e.check(Ask(POOL, rows, T + 1.999), on) == Refusal("breaker", T + 2.0)


def test_headroom_refuses_until_the_reset_its_provider_gave():
    gate = Gate(exhausted={"a": T + 99})
    row = _row("a")
    assert _el(gate=gate).check(Ask(POOL, [row], T), row) == Refusal("headroom", T + 99)


def test_tried_refuses_a_row_this_request_failed_on():
    row = make_row(11, token="sk-or-v1-" + "9" * 32)
    e = _el()
    assert e.check(Ask(POOL, [row], T, tried={(POOL, "11")}), row) == Refusal("tried", None)
    assert e.check(Ask(POOL, [row], T, tried={("anthropic", "11")}), row) is None


def test_the_first_filter_in_order_names_the_refusal():
    row = _row("a", base_url=UP, last_status="exhausted", last_status_at=T, last_error_code=429,
               model_cooldowns={"m": T + 50}, model_cooldown_observed_at={"m": T})
    gate = Gate(exhausted={"a": T + 99, "b": T + 99})
    e = _el(breakers=_open(), gate=gate)
    tried = {(POOL, "a"), (POOL, "b")}
    assert e.check(Ask(POOL, [row], T, scope="m", tried=tried), row).filter == "cooling"
    benched = _row("b", base_url=UP, model_cooldowns={"m": T + 50}, model_cooldown_observed_at={"m": T})
    assert e.check(Ask(POOL, [benched], T, scope="m", tried=tried), benched).filter == "model"
    assert e.check(Ask(POOL, [benched], T, scope=None, tried=tried), benched).filter == "breaker"
    assert e.check(Ask(POOL, [benched], T + 5, scope=None, tried=tried), benched).filter == "headroom"
    assert el.FILTERS == ("protocol", "cooling", "model", "breaker", "headroom", "budget", "tried")


def test_checks_gives_each_rows_status_and_first_refusal():
    rows = [_row("a"), _row("b", last_status="dead"), _row("c", base_url=UP)]
    got = _el(breakers=_open()).checks(Ask(POOL, rows, T))
    assert [(eff.status, r) for eff, r in got] == [
        ("ok", None), ("dead", Refusal("dead", None)), ("ok", Refusal("breaker", T + 2.0))]


# --- what selection's fast path takes -------------------------------------------------------------

def test_keep_is_none_when_nothing_can_be_left_out():
    assert _el().keep(POOL, None, T, None) is None
    assert _el().keep(POOL, None, T, set()) is None


def test_keep_leaves_out_tried_rows_and_rows_on_open_upstreams():
    rows = [_row("a"), _row("b", base_url=UP), _row("c", base_url=OTHER, inference_base_url=UP), _row("d")]
    keep = _el().keep(POOL, None, T, {(POOL, "a")})
    assert [r["id"] for r in rows if keep(r)] == ["b", "c", "d"]
    keep = _el(breakers=_open()).keep(POOL, None, T, None)
    assert [r["id"] for r in rows if keep(r)] == ["a", "d"]
    keep = _el(breakers=_open()).keep(POOL, UP, T, {(POOL, "a")})
    assert [r["id"] for r in rows if keep(r)] == []
    keep = _el(breakers=_open()).keep(POOL, None, T + 2.0, None)   # reopened
    assert [r["id"] for r in rows if keep(r)] == ["a", "b", "c", "d"]


def test_hold_is_none_unless_the_gate_holds_and_passes_what_it_is_asked():
    assert _el(gate=Gate()).hold(POOL, T) is None
    assert _el(gate=Gate(holds={"b"})).hold("anthropic", T) is None
    gate, env = Gate(holds={"b"}), {"K": "v"}
    hold = _el(gate=gate, env=env).hold(POOL, T)
    assert hold([_row("a"), _row("b")]) == {"b"}
    assert gate.calls == [("held", POOL, ["a", "b"], T, env)]


def test_upstream_open_reads_the_clock_at_each_check():
    now = [T]
    ok = _el(breakers=_open()).upstream_open(POOL, lambda: now[0])
    on, off = _row("a", base_url=UP), _row("b", base_url=OTHER)
    assert (ok(on), ok(off)) == (False, True)
    now[0] = T + 2.0
    assert ok(on) is True


def test_a_row_with_no_base_is_on_its_providers_endpoint():
    e = _el(breakers=_open("https://openrouter.ai/api/v1"))
    row, elsewhere = _row("a"), _row("b", base_url=UP)
    assert e.check(Ask(POOL, [row], T), row) == Refusal("breaker", T + 2.0)
    keep = e.keep(POOL, None, T, None)
    assert (keep(row), keep(elsewhere)) == (False, True)
    ok = e.upstream_open(POOL, lambda: T)
    assert (ok(row), ok(elsewhere)) == (False, True)


def test_base_is_the_rows_then_the_routes_then_the_providers():
    assert Eligibility.base(POOL, _row("a", base_url=UP + "/")) == UP
    assert Eligibility.base(POOL, _row("a", base_url=OTHER, inference_base_url=UP)) == UP
    assert Eligibility.base(POOL, _row("a"), OTHER) == OTHER
    assert Eligibility.base(POOL, _row("a")) == "https://openrouter.ai/api/v1"


# --- why no key, and the status file's counts ----------------------------------------------------

def test_why_names_each_route_and_counts_keys():
    kind, parts = why([
        ("or", [(None, Refusal("cooling", T + 1)), (None, Refusal("cooling", T + 2)), (None, Refusal("tried"))]),
        ("an", [(None, Refusal("model", T + 3)), (None, None)]),
        ("empty", []),
        ("only-tried", [(None, Refusal("tried"))]),
        ("last", [(None, Refusal("dead")), (None, Refusal("cooling", T + 1))]),
    ])
    assert kind == "all_credentials_cooling"
    assert parts == ["or: cooling (2 keys)", "an: benched for the model asked for (1 key)", "empty: no credential",
                     "last: dead, needs an operator (1 key), cooling (1 key)"]


@pytest.mark.parametrize("refusals,kind", [
    (["dead"], "all_credentials_cooling"),
    (["cooling", "dead", "model"], "all_credentials_cooling"),
    (["breaker"], "upstream_unavailable"),
    (["breaker", "cooling"], "no_usable_credential"),
    (["headroom"], "no_usable_credential"),
    (["protocol"], "no_usable_credential"),
])
def test_why_kind_is_a_bench_only_when_every_refusal_is_one(refusals, kind):
    assert why([("r", [(None, Refusal(f)) for f in refusals])])[0] == kind


def test_why_words_protocol_without_a_count():
    assert why([("r", [(None, Refusal("protocol")), (None, Refusal("protocol"))])])[1] == ["r: protocol not spoken"]
    assert why([("r", [(None, Refusal("breaker", T))])])[1] == ["r: upstream unavailable, circuit breaker open (1 key)"]


def test_describe_refusals_counts_rows_per_filter():
    checks = [(None, Refusal("cooling")), (None, None), (None, Refusal("cooling")), (None, Refusal("tried"))]
    assert describe_refusals(checks) == {"cooling": 2, "tried": 1}
    assert describe_refusals([]) == {}


# --- negative control ------------------------------------------------------------------------------

def test_control_a_breaker_that_ignores_the_rows_own_base_is_caught():
    """The breaker filter taking the route's base over the row's (a plausible slip in the
    ``or`` chain of :meth:`Eligibility.base`) lets a row on an open upstream through."""
    broken = mutant("store.proxy.routing.eligibility",
                    'row.get("inference_base_url") or row.get("base_url") or route_base)\n\n    def keep',
                    'route_base or row.get("inference_base_url") or row.get("base_url"))\n\n    def keep')
    e = broken.Eligibility(_open(), Gate(), {}, lambda: policy.DEFAULT_TTLS)
    row = _row("a", base_url=UP)
    assert e.check(broken.Ask(POOL, [row], T, route_base=OTHER), row) is None      # the slip: served
    assert _el(breakers=_open()).check(Ask(POOL, [row], T, route_base=OTHER), row) == Refusal("breaker", T + 2.0)


# --- the reserve rule (#29): a reserve row only when no other row may serve -----------------------

def _reserving(gate: Gate | None = None, env: dict | None = None) -> Eligibility:
    e = _el(gate=gate, env=env)
    e.budgets.budgets = {POOL: PoolBudget(reserve=("r",))}
    return e


def test_another_serves_asks_every_filter_of_the_rows_but_the_reserve_and_the_one_asked():
    r, a, b = _row("r"), _row("a"), _row("b", last_status="exhausted", last_status_at=T, last_error_code=429)
    e = _reserving()
    assert e.another_serves(Ask(POOL, [r, a, b], T), "r") is True
    assert e.another_serves(Ask(POOL, [r, a, b], T), "a") is False       # b cools, r is the reserve
    assert e.another_serves(Ask(POOL, [r, a, b], T, tried={(POOL, "a")}), "r") is False
    assert e.another_serves(Ask(POOL, [r, "junk", a], T), "r") is True
    borrowed = make_row("c", source="env:ELIG_RESERVE_BORROWED")         # no live secret here
    assert e.another_serves(Ask(POOL, [r, borrowed], T), "r") is False
    assert _el().another_serves(Ask(POOL, [r, a], T), "a") is True      # no budget: r is a row like any


def test_upstream_open_holds_the_reserve_only_while_another_row_serves():
    r, a = _row("r"), _row("a")
    e = _reserving()
    asked = []

    def others(row):
        asked.append(row["id"])
        return serves[0]

    serves = [True]
    ok = e.upstream_open(POOL, lambda: T, others)
    assert (ok(r), ok(a)) == (False, True) and asked == ["r"]        # an ordinary row is never asked about
    serves[0] = False
    assert ok(r) is True
    assert e.upstream_open(POOL, lambda: T)(r) is True                # no question given: no hold
    assert _el().upstream_open(POOL, lambda: T, others)(r) is True    # no budget: no reserve


def test_hold_with_a_budget_asks_the_gate_about_the_ordinary_rows_and_keeps_the_reserve_ids():
    r, a, b = _row("r"), _row("a"), _row("b")
    gate = Gate(holds={"a"})
    e = _reserving(gate=gate, env={"E": "1"})
    hold = e.hold(POOL, T, [r, a, b], 5)
    assert set(hold([r, a, b])) == {"r", "a"}                       # b serves: the reserve and a's hold wait
    assert gate.calls == [("held", POOL, ["a", "b"], T, {"E": "1"})]
    assert e.budgets._reserve[POOL] == ((5, id(e.budgets.budgets[POOL])), frozenset({"r"}))
    assert set(e.hold(POOL, T, [r, a, b], 5)([r, a])) == {"a"}       # a held even alone (out): the reserve serves
    plain = _reserving()                                             # no headroom holds: the gate is not asked
    assert set(plain.hold(POOL, T, [r, a], 1)([r, a])) == {"r"}
    assert set(plain.hold(POOL, T, [r, a], 1)([r])) == set()
    assert _el().hold(POOL, T, [r, a], 1) is None                    # no budget, no holds: nothing to ask


def test_the_budget_filter_refuses_with_its_words_and_reset():
    e = _reserving()
    e.budgets.budgets = {POOL: PoolBudget(key=Limits(day=1.0))}
    e.budgets.tally.add(POOL, "a", 1.0, T)
    got = e.check(Ask(POOL, [_row("a")], T), _row("a"))
    assert got == Refusal("budget", (int(T // 86400) + 1) * 86400.0, "over budget: $1.00 a day, resets 00:00 UTC")
    assert e.check(Ask(POOL, [_row("b")], T), _row("b")) is None
    assert e.budget(Ask(POOL, [_row("a")], T), _row("a"), None) == got
    e.budgets.budgets = {}
    assert e.budget(Ask(POOL, [_row("a")], T), _row("a"), None) is None
