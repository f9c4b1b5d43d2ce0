"""store/pools/policy.py's writes and choices, compared exactly (whole rows, exact times).

Written from the mutants `make mutate` showed surviving: a field name misspelt, a value
left out, a TTL table not passed through, a lease cap off by one. Each test pins one
documented behaviour (spec sections 4-6).
"""

from __future__ import annotations

import random
import types

import pytest

from store.pools import generations, policy, times
from store.pools.policy import Ttls
from tests.mutant import mutant

NOW = 1_800_000_000.0
STATUS = ("last_status", "last_status_at", "last_error_code", "last_error_reason",
          "last_error_message", "last_error_reset_at")


def row(rid: str, priority: int = 0, **fields: object) -> dict:
    r = {"id": rid, "label": rid, "priority": priority, "source": "manual",
         "access_token": f"sk-or-v1-{rid}" + "0" * 24, "request_count": 0}
    r.update({f: None for f in STATUS})
    r.update(fields)
    return r


def cooling(rid: str, priority: int = 0, age: float = 100, code: int = 429, **fields: object) -> dict:
    return row(rid, priority, last_status="exhausted", last_status_at=NOW - age, last_error_code=code, **fields)


# --- mark_exhausted ----------------------------------------------------------------------------

def test_mark_exhausted_writes_every_status_field() -> None:
    a, b = row("a"), row("b", 1)
    a["failure_reason"] = "old"
    changed = policy.mark_exhausted([a, b], a, NOW, code=429, reason="rate_limit_exceeded",
                                    message="slow down", reset_at="2027-01-15T08:00:00Z", failure_reason="rate_limit")
    assert changed == [a]
    assert {f: a[f] for f in STATUS} == {
        "last_status": "exhausted", "last_status_at": NOW, "last_error_code": 429,
        "last_error_reason": "rate_limit_exceeded", "last_error_message": "slow down",
        "last_error_reset_at": 1800000000.0,
    }
    assert a["failure_reason"] == "rate_limit"
    assert {f: b[f] for f in STATUS} == {f: None for f in STATUS}


def test_mark_exhausted_without_failure_reason_drops_the_old_one() -> None:
    a = row("a", failure_reason="billing")
    policy.mark_exhausted([a], a, NOW, code=500)
    assert "failure_reason" not in a and a["last_error_code"] == 500 and a["last_error_reset_at"] is None


def test_mark_exhausted_benches_every_row_with_the_same_secret() -> None:
    a, twin, other = row("a"), row("t", 1), row("o", 2)
    twin["access_token"] = a["access_token"]
    fa, fb, fc = row("fa", 3), row("fb", 4), row("fc", 5)
    for r in (fa, fb, fc):
        del r["access_token"]
    fa["secret_fingerprint"] = fb["secret_fingerprint"] = "sha256:1111"
    fc["secret_fingerprint"] = "sha256:2222"
    rows = [a, twin, other, fa, fb, fc]
    assert policy.mark_exhausted(rows, a, NOW, code=402) == [a, twin]
    assert policy.mark_exhausted(rows, fa, NOW, code=429) == [fa, fb]
    assert other["last_status"] is None and fc["last_status"] is None


def test_secret_key_values() -> None:
    assert policy.secret_key({"access_token": "tok"}) == "token:tok"
    assert policy.secret_key({"access_token": "", "secret_fingerprint": "sha256:1"}) == "fp:sha256:1"
    assert policy.secret_key({"access_token": 5, "secret_fingerprint": 7}) is None
    assert policy.secret_key({"secret_fingerprint": ""}) is None
    assert policy.secret_key({}) is None


@pytest.mark.parametrize("reason, status", [("token_revoked", "dead"), ("  Invalid_Grant ", "dead"),
                                            (None, "exhausted"), ("rate_limit", "exhausted")])
def test_terminal_401_reasons_make_the_row_dead(reason, status) -> None:
    a = row("a")
    policy.mark_exhausted([a], a, NOW, code=401, reason=reason)
    assert a["last_status"] == status


# --- reset, manual cooldown, clear_elapsed -----------------------------------------------------

def test_reset_is_exact() -> None:
    a = cooling("a", failure_reason="billing", model_cooldowns={"m": NOW + 5},
                model_cooldown_observed_at={"m": NOW}, request_count=7, x_unknown=1)
    policy.reset(a, NOW)
    assert a == {**row("a"), "request_count": 7, "x_unknown": 1, "status_cleared_at": NOW}


@pytest.mark.parametrize("reason, stored", [(None, "manual_cooldown"), ("", "manual_cooldown"), ("why", "why")])
def test_manual_cooldown_is_exact(reason, stored) -> None:
    a = row("a")
    policy.manual_cooldown(a, NOW + 600, NOW, reason)
    assert {f: a[f] for f in STATUS} == {
        "last_status": "exhausted", "last_status_at": NOW, "last_error_code": None,
        "last_error_reason": stored, "last_error_message": "cooldown set by operator (hermes-admin)",
        "last_error_reset_at": NOW + 600}


def test_clear_elapsed_nulls_every_field_and_uses_the_given_ttls() -> None:
    a, b = cooling("a", age=200), cooling("b", 1, age=200)
    cleared = policy.clear_elapsed([a, b], NOW, Ttls(rate_limit_429=150))
    assert cleared == [a, b]
    for r in (a, b):
        assert {f: r[f] for f in STATUS} == {**{f: None for f in STATUS}, "last_status": "ok"}
    c, d = cooling("c", age=200), cooling("d", 1, age=200)
    assert policy.clear_elapsed([c, d], NOW) == []          # default 3600 s: still cooling


# --- ttl_for, effective ------------------------------------------------------------------------

@pytest.mark.parametrize("code, expected", [(401, 1.0), (429, 2.0), (500, 3.0), (None, 3.0), (402, 3.0)])
def test_ttl_for_reads_its_own_line_of_the_table(code, expected) -> None:
    ttls = Ttls(auth_401=1, rate_limit_429=2, default=3, only_row_cap=100, billing_unverified=100)
    assert policy.ttl_for(row("a", last_error_code=code), False, ttls) == expected


def test_is_billing() -> None:
    assert policy.is_billing(row("a", last_error_code=402))
    assert policy.is_billing(row("a", failure_reason="billing"))
    assert not policy.is_billing(row("a", last_error_code=None))
    assert not policy.is_billing(row("a", last_error_code="x"))


def test_effective_carries_benches_and_data_errors_in_every_state() -> None:
    bench = {"model_cooldowns": {"m": NOW + 50}, "last_error_reset_at": "junk"}
    for r, status in ((row("a", **bench), "ok"), (row("a", last_status="dead", **bench), "dead"),
                      (cooling("a", age=10, **bench), "cooling"), (cooling("a", age=5000, **bench), "ready")):
        eff = policy.effective(r, [r, row("z", 9)], NOW)
        assert eff.status == status and eff.model_benches == {"m": NOW + 50}
        assert eff.data_error == "last_error_reset_at 'junk' is not a usable time; Hermes ignores it"


def test_effective_times_are_exact_and_use_the_given_ttls() -> None:
    r = cooling("a", age=100)
    eff = policy.effective(r, [r, row("z", 9)], NOW, Ttls(rate_limit_429=1000))
    assert (eff.status, eff.available_at, eff.seconds_left) == ("cooling", NOW + 900, 900)
    ready = policy.effective(r, [r, row("z", 9)], NOW, Ttls(rate_limit_429=50))
    assert (ready.status, ready.available_at, ready.seconds_left) == ("ready", NOW - 50, None)


def test_model_benches_edges() -> None:
    r = row("a", model_cooldowns={"gone": NOW - 1, "now": NOW, "bad": "x", "live": NOW + 1},
            model_cooldown_observed_at={"live": NOW - 1})
    assert policy.model_benches(r, NOW) == {"live": NOW + 1}


def test_only_live_row() -> None:
    a = cooling("a")
    assert policy.is_only_live_row(a, [a, row("d", 1, last_status="dead")])
    assert not policy.is_only_live_row(a, [row("b")])             # not in the pool
    assert not policy.is_only_live_row(a, [a, row("b", 1)])


def test_reset_at_problem_none_and_empty_are_fine() -> None:
    assert times.reset_at_problem(row("a", last_error_reset_at=None)) is None
    assert times.reset_at_problem(row("a", last_error_reset_at="")) is None
    assert times.reset_at_problem(row("a", last_error_reset_at=" ")) is not None


def test_known_strategy() -> None:
    assert policy.known_strategy(" Round_Robin ") == "round_robin"
    assert policy.known_strategy("quota_aware") == "fill_first"
    assert policy.known_strategy(None) == "fill_first"


# --- pick / select -----------------------------------------------------------------------------

def test_pick_with_leases_prefers_rows_below_the_cap() -> None:
    rows = [row("a"), row("b", 1), row("c", 2)]
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 1}, lease_cap=1)["id"] == "b"
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 1, "b": 1, "c": 1}, lease_cap=1)["id"] == "a"
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 2, "b": 1, "c": 3}, lease_cap=1)["id"] == "b"
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 1, "b": 0, "c": 0}, lease_cap=2)["id"] == "b"
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 5}, lease_cap=None)["id"] == "a"
    assert policy.pick(rows, "fill_first", NOW, leases=None, lease_cap=1)["id"] == "a"


def test_pick_strategies() -> None:
    rows = [row("a", request_count=5), row("b", 1, request_count=2), row("c", 2, request_count=2)]
    assert policy.pick(rows, "least_used", NOW)["id"] == "b"
    assert policy.pick(rows, "random", NOW) is None
    assert policy.pick(rows, "random", NOW, rng=random.Random(1))["id"] in {"a", "b", "c"}
    assert policy.pick([], "fill_first", NOW) is None


def test_select_passes_its_arguments_through() -> None:
    rows = [cooling("a", age=200), row("b", 1, request_count=9), row("c", 2, request_count=1)]
    # With a 150 s TTL row a has elapsed: select clears it and least_used takes it (count 0).
    chosen = policy.select(rows, "least_used", NOW, Ttls(rate_limit_429=150))
    assert chosen["id"] == "a" and chosen["request_count"] == 1 and chosen["last_status"] == "ok"
    rows = [row("a"), row("b", 1)]
    assert policy.select(rows, "fill_first", NOW, eligible=lambda r: r["id"] == "b")["id"] == "b"
    rows = [row("a", model_cooldowns={"m": NOW + 9}), row("b", 1)]
    assert policy.select(rows, "fill_first", NOW, model="other")["id"] == "a"


def test_round_robin_moves_the_pick_last_and_renumbers() -> None:
    rows = [row("a", 5), row("b", 7), row("c", 9)]
    assert policy.select(rows, "round_robin", NOW)["id"] == "a"
    assert [(r["id"], r["priority"]) for r in rows] == [("b", 0), ("c", 1), ("a", 2)]


def test_renumber_and_move() -> None:
    rows = [row("a", 5), row("b", 2), row("c", 9)]
    policy.renumber(rows)
    assert [(r["id"], r["priority"]) for r in rows] == [("b", 0), ("a", 1), ("c", 2)]
    policy.move(rows, rows[2], 0)
    assert [(r["id"], r["priority"]) for r in rows] == [("c", 0), ("b", 1), ("a", 2)]


# --- the admin-era rules, told or not (spec section 4, docs/compatibility.md) ------------------

ADMIN = Ttls(told=generations.Told(generations.ADMIN))
OLDEST = Ttls(told=generations.Told(generations.OLDEST))


def test_a_billing_bench_cleared_after_it_was_set_is_over_in_the_admin_era() -> None:
    cleared = cooling("a", code=402, status_cleared_at=NOW - 50)
    pool = [cleared, row("z", 9)]
    assert policy.until(cleared, pool, NOW, ADMIN) is None
    assert policy.until(cleared, pool, NOW) == NOW - 100 + 3600          # untold: the bench stands
    before = cooling("b", code=402, status_cleared_at=NOW - 100)          # cleared at the bench: stands
    assert policy.until(before, [before, row("z", 9)], NOW, ADMIN) == NOW - 100 + 3600
    rate = cooling("c", status_cleared_at=NOW - 50)                        # not billing: stands
    assert policy.until(rate, [rate, row("z", 9)], NOW, ADMIN) == NOW - 100 + 3600
    assert policy.effective(cleared, pool, NOW, ADMIN).status == "ready"


def test_the_only_live_row_caps_a_provider_reset_in_the_admin_era() -> None:
    a = cooling("a", age=10, last_error_reset_at=NOW + 3000)
    dead = row("d", 1, last_status="dead")
    assert policy.until(a, [a, dead], NOW, ADMIN) == NOW - 10 + 60
    assert policy.until(a, [a, dead], NOW) == NOW + 3000                    # untold: the reset
    assert policy.until(a, [a, row("b", 1), dead], NOW, ADMIN) == NOW + 3000  # another live row
    soon = cooling("s", age=10, last_error_reset_at=NOW + 20)
    assert policy.until(soon, [soon], NOW, ADMIN) == NOW + 20               # the earlier of the two
    billing = cooling("p", age=10, code=402, last_error_reset_at=NOW + 3000)
    assert policy.until(billing, [billing], NOW, ADMIN) == NOW + 3000       # billing is not capped
    no_at = row("n", last_status="exhausted", last_error_code=429, last_error_reset_at=NOW + 3000)
    assert policy.until(no_at, [no_at], NOW, ADMIN) == NOW + 3000


def test_until_without_a_bench_time() -> None:
    a = row("a", last_status="exhausted", last_error_code=429)
    assert policy.until(a, [a], NOW) is None
    assert policy.until(row("b", last_status="ok"), [], NOW) is None
    assert policy.until(row("c", last_status="dead"), [], NOW) == float("inf")


def test_ttl_for_the_entitlement_billing_unverified_and_only_row_lines() -> None:
    ent = row("a", last_error_code=403, failure_reason="entitlement")
    assert policy.ttl_for(ent, False, ADMIN) == generations.ENTITLEMENT_TTL == 172800.0
    assert policy.ttl_for(ent, False) == 3600.0
    assert policy.ttl_for(ent, False, Ttls(entitlement=7, told=ADMIN.told)) == 7.0
    unverified = row("b", last_error_code=429, failure_reason="billing_unverified")
    assert policy.ttl_for(unverified, False) == 60.0
    assert policy.ttl_for(unverified, False, Ttls(billing_unverified=9000, rate_limit_429=100)) == 100.0
    assert policy.ttl_for(row("c", last_error_code=402, failure_reason="billing_unverified"), False) == 3600.0
    assert policy.ttl_for(row("d", last_error_code=429), True) == 60.0
    assert policy.ttl_for(row("d", last_error_code=429), True, Ttls(only_row_cap=9000, rate_limit_429=100)) == 100.0
    assert policy.ttl_for(row("d", last_error_code=429), True, OLDEST) == 3600.0   # 0.19: no cap
    assert policy.ttl_for(row("e", last_error_code=402), True) == 3600.0            # billing: no cap
    assert policy.ttl_for(row("f", last_error_code=401), True) == 300.0             # 401 before the cap
    assert policy.ttl_for(row("g", last_error_code="429"), False) == 3600.0 and policy.ttl_for(
        row("g", last_error_code="429"), True) == 60.0


def test_until_of_the_only_row_uses_the_cap() -> None:
    a = cooling("a", age=10)
    assert policy.until(a, [a, row("d", 1, last_status="dead")], NOW) == NOW - 10 + 60
    assert policy.until(a, [a, row("b", 1)], NOW) == NOW - 10 + 3600


def test_has_available_counts_model_benches_only_before_the_admin_era() -> None:
    benched = [row("a", model_cooldowns={"m": NOW + 50}), cooling("b", 1)]
    assert not policy.has_available(benched, NOW)
    assert policy.has_available(benched, NOW, ADMIN)
    assert policy.has_available(iter([row("c")]), NOW)
    assert not policy.has_available([cooling("a", age=10), cooling("b", 1, age=10)], NOW, Ttls(rate_limit_429=50))
    assert policy.has_available([cooling("a", age=10), cooling("b", 1, age=100)], NOW, Ttls(rate_limit_429=50))


def test_usable_for_a_model() -> None:
    eff = policy.Effective("ok", None, None, {"m": NOW + 5})
    assert eff.usable and eff.usable_for("other") and not eff.usable_for("m") and not eff.usable_for(None)
    assert policy.Effective("ready", None, None).usable_for(None)
    for status in ("cooling", "dead"):
        assert not policy.Effective(status, None, None).usable_for("other")


def test_bench_reset_never_ends_before_the_floor() -> None:
    assert policy.BENCH_FLOOR == 5.0
    assert policy.bench_reset(None, NOW) is None
    assert policy.bench_reset(NOW - 100, NOW) == NOW + 5
    assert policy.bench_reset(NOW + 5, NOW) == NOW + 5
    assert policy.bench_reset(NOW + 5.5, NOW) == NOW + 5.5


def test_ttls_from_mapping_reads_the_entitlement_line() -> None:
    assert Ttls.from_mapping({"entitlement": 5}) == Ttls(entitlement=5.0)
    assert Ttls.from_mapping({"only_row": 1, "billing_unverified": 2}) == Ttls(only_row_cap=1.0, billing_unverified=2.0)


def test_terminal_auth_failure_needs_a_401() -> None:
    assert policy.terminal_auth_failure(401, " token_revoked")
    assert not policy.terminal_auth_failure(403, "token_revoked")
    assert not policy.terminal_auth_failure(401, None) and not policy.terminal_auth_failure(None, "invalid_grant")


def test_available_takes_what_a_view_already_knows() -> None:
    a, b = row("a"), row("b", 1)
    known = {id(a): policy.Effective("cooling", NOW + 9, 9.0)}
    assert policy.available([b, a], NOW, known=known) == [b]
    assert policy.available([b, a], NOW) == [a, b]
    assert policy.pick([a, b], "fill_first", NOW, known=known) is b


def test_pick_ordered_keeps_the_order_it_is_given() -> None:
    a, b = row("a", 5), row("b", 1)
    assert policy.pick([a, b], "fill_first", NOW, ordered=True) is a
    assert policy.pick([a, b], "fill_first", NOW) is b
    assert policy.pick([a, b], "least_used", NOW, ordered=True) is b      # ties by priority still


def test_pick_at_the_lease_cap_ties_by_priority() -> None:
    rows = [row("a", 2), row("b", 0), row("c", 1)]
    assert policy.pick(rows, "least_used", NOW, leases={}, lease_cap=1)["id"] == "b"
    assert policy.pick(rows, "least_used", NOW, leases={"b": 1, "c": 1, "a": 1}, lease_cap=1)["id"] == "b"


def test_select_passes_strategy_weigh_and_rng_to_pick() -> None:
    rows = [row("a", request_count=5), row("b", 1, request_count=1), row("c", 2, request_count=3)]
    assert policy.select(rows, "least_used", NOW)["id"] == "b"
    rows = [row("a", request_count=5), row("b", 1, request_count=1), row("c", 2, request_count=3)]
    weigh = {"a": 0.9, "b": 0.1, "c": 0.5}
    assert policy.select(rows, "least_used", NOW, weigh=lambda r: weigh[r["id"]])["id"] == "a"

    class Last(random.Random):
        def choice(self, seq):  # type: ignore[override]
            return seq[-1]
    rows = [row("a"), row("b", 1), row("c", 2)]
    assert policy.select(rows, "random", NOW, rng=Last())["id"] == "c"
    assert policy.select(rows, "random", NOW)["id"] in {"a", "b", "c"}      # no rng: its own


def test_round_robin_with_one_usable_row_leaves_the_order() -> None:
    rows = [row("a", 3), cooling("b", 5), row("c", 9, last_status="dead")]
    assert policy.select(rows, "round_robin", NOW)["id"] == "a"
    assert [(r["id"], r["priority"]) for r in rows] == [("a", 3), ("b", 5), ("c", 9)]


def test_reset_of_a_row_without_benches_and_manual_cooldown_over_an_error() -> None:
    a = row("a")
    policy.reset(a, NOW)
    assert a == {**row("a"), "status_cleared_at": NOW}
    b = cooling("b")
    policy.manual_cooldown(b, NOW + 60, NOW)
    assert b["last_error_code"] is None and b["last_error_reason"] == "manual_cooldown"


def test_move_clamps_the_position() -> None:
    rows = [row("a", 0), row("b", 1), row("c", 2)]
    policy.move(rows, rows[0], 99)
    assert [(r["id"], r["priority"]) for r in rows] == [("b", 0), ("c", 1), ("a", 2)]
    policy.move(rows, rows[2], -4)
    assert [(r["id"], r["priority"]) for r in rows] == [("a", 0), ("b", 1), ("c", 2)]


def test_only_live_row_is_a_bool_and_never_a_dead_or_absent_row() -> None:
    a, dead = cooling("a"), row("d", 1, last_status="dead")
    assert policy.is_only_live_row(a, [a, dead]) is True
    assert policy.is_only_live_row(a, [dead]) is False                    # not in the pool
    assert policy.is_only_live_row(dead, [dead]) is False                 # a dead row is no live row
    assert policy.is_only_live_row(a, iter([dead, a])) is True


def test_clear_elapsed_nulls_an_error_that_was_set() -> None:
    a = cooling("a", age=200, last_error_reason="rate_limit", last_error_message="slow down",
                last_error_reset_at=NOW - 10)
    assert policy.clear_elapsed([a, row("z", 9)], NOW) == [a]
    assert {f: a[f] for f in STATUS} == {**{f: None for f in STATUS}, "last_status": "ok"}


def test_available_uses_the_ttls_it_is_given() -> None:
    a = cooling("a", age=100)
    assert policy.available([a, row("z", 9)], NOW, Ttls(rate_limit_429=50))[0] is a
    assert a not in policy.available([a, row("z", 9)], NOW)


def test_pick_beyond_the_first_row_keeps_model_known_and_order() -> None:
    a = row("a", request_count=0, model_cooldowns={"m": NOW + 50})
    b, c = row("b", 1, request_count=3), row("c", 2, request_count=1)
    assert policy.pick([a, b, c], "least_used", NOW, model="m") is c
    assert policy.pick([a, b, c], "least_used", NOW, model="other") is a
    known = {id(c): policy.Effective("cooling", NOW + 9, 9.0)}
    assert policy.pick([a, b, c], "least_used", NOW, model="m", known=known) is b

    class Last(random.Random):
        def choice(self, seq):  # type: ignore[override]
            return seq[-1]
    x, y = row("x", 5), row("y", 1)
    assert policy.pick([x, y], "random", NOW, rng=Last(), ordered=True) is y
    assert policy.pick([x, y], "random", NOW, rng=Last()) is x


def test_pick_counts_a_row_without_leases_as_none_taken() -> None:
    rows = [row("a"), row("b", 1), row("c", 2)]
    assert policy.pick(rows, "fill_first", NOW, leases={"b": 0}, lease_cap=1)["id"] == "a"
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 1, "c": 0}, lease_cap=1)["id"] == "b"


def test_the_admin_cap_on_a_reset_uses_the_configured_ttls() -> None:
    a = cooling("a", age=10, last_error_reset_at=NOW + 3000)
    assert policy.until(a, [a], NOW, Ttls(only_row_cap=30, told=ADMIN.told)) == NOW - 10 + 30
    assert policy.until(a, [a], NOW, Ttls(rate_limit_429=20, told=ADMIN.told)) == NOW - 10 + 20


def test_a_bench_before_the_reset_is_skipped_and_the_next_model_still_read() -> None:
    r = row("a", status_cleared_at=NOW - 50, model_cooldowns={"old": NOW + 60, "new": NOW + 70},
            model_cooldown_observed_at={"old": NOW - 60, "new": NOW - 40})
    assert policy.model_benches(r, NOW) == {"new": NOW + 70}


def test_an_ok_row_without_benches_still_shows_its_data_error() -> None:
    r = row("a", last_error_reset_at="junk")
    eff = policy.effective(r, [r], NOW)
    assert (eff.status, eff.model_benches) == ("ok", {})
    assert eff.data_error == "last_error_reset_at 'junk' is not a usable time; Hermes ignores it"
    assert policy.effective(row("b"), [], NOW).data_error is None


def test_a_cooldown_ending_off_the_calendar_is_a_data_error() -> None:
    last = times.LATEST_SHOWN - 100         # 100 s before the last time shown (9999-12-30)
    r = row("a", last_status="exhausted", last_status_at=last, last_error_code=429)
    eff = policy.effective(r, [r, row("z", 9)], last)
    assert eff.status == "cooling" and eff.available_at == last + 3600
    assert eff.data_error is not None and "the cooldown's end" in eff.data_error


def test_control_the_admin_cap_without_the_only_row_check() -> None:
    bad = policy_mutant("not is_billing(row) and is_only_live_row(row, pool_rows):", "not is_billing(row):")
    a = cooling("a", age=10, last_error_reset_at=NOW + 3000)
    assert bad.until(a, [a, row("b", 1)], NOW, ADMIN) == NOW - 10 + 60      # the reset is lost


def test_control_has_available_ignoring_the_generation() -> None:
    bad = policy_mutant("e.usable if ttls.told.admin else e.usable_for(None)", "e.usable_for(None)")
    assert not bad.has_available([row("a", model_cooldowns={"m": NOW + 50})], NOW, ADMIN)


def policy_mutant(old: str, new: str) -> types.ModuleType:
    return mutant("store.pools.policy", old, new)
