"""Property tests of store.pools.policy against spec section 4 (cooldowns) and 6 (selection)."""

from __future__ import annotations

import math
import random
from datetime import datetime, timezone

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from store.model import parse_epoch
from store.pools import policy

NOW = 1_800_000_000.0

codes = st.sampled_from([None, 401, 402, 403, 429, 500, 502, 503, 529])
reasons = st.sampled_from([None, "rate_limit_exceeded", "insufficient_credits", "invalid_grant",
                           "token_revoked", "usage_limit_reached", "server_error"])
failure_reasons = st.sampled_from([None, "billing", "billing_unverified", "rate_limit", "auth"])
ages = st.floats(min_value=0, max_value=10 * 86400, allow_nan=False)


def exhausted(code, age, *, reason=None, failure_reason=None, reset=None, rid="a"):
    row = {"id": rid, "label": rid, "priority": 0, "access_token": "tok-" + rid,
           "last_status": "exhausted", "last_status_at": NOW - age, "last_error_code": code,
           "last_error_reason": reason, "last_error_message": None, "last_error_reset_at": reset,
           "request_count": 0}
    if failure_reason:
        row["failure_reason"] = failure_reason
    return row


def ok_row(rid, prio=0, count=0):
    return {"id": rid, "label": rid, "priority": prio, "access_token": "tok-" + rid, "last_status": None,
            "last_status_at": None, "last_error_code": None, "last_error_reason": None,
            "last_error_message": None, "last_error_reset_at": None, "request_count": count}


def spec_ttl(code, failure_reason, only_row):
    """The TTL table of spec section 4, written out independently of the implementation."""
    if code == 401:
        return 300
    billing = code == 402 or failure_reason == "billing"
    if failure_reason == "billing_unverified" and code != 402:
        return 60
    if only_row and not billing:
        return 60
    return 3600


@given(code=codes, age=ages, fr=failure_reasons, only=st.booleans())
def test_until_follows_the_ttl_table(code, age, fr, only):
    row = exhausted(code, age, failure_reason=fr)
    rows = [row] if only else [row, ok_row("b", 1)]
    assert policy.until(row, rows, NOW) == pytest.approx(NOW - age + spec_ttl(code, fr, only), abs=1)


@given(code=codes, age=ages, delta=st.floats(min_value=-86400, max_value=7 * 86400, allow_nan=False),
       form=st.sampled_from(["s", "ms", "iso", "iso_z", "str"]), only=st.booleans())
def test_provider_reset_time_wins_in_every_form(code, age, delta, form, only):
    reset = round(NOW + delta, 3)
    raw = {
        "s": reset,
        "ms": int(reset * 1000),
        "iso": datetime.fromtimestamp(reset, timezone.utc).isoformat(),
        "iso_z": datetime.fromtimestamp(reset, timezone.utc).isoformat().replace("+00:00", "Z"),
        "str": str(reset),
    }[form]
    row = exhausted(code, age, reset=raw)
    rows = [row] if only else [row, ok_row("b", 1)]
    assert policy.until(row, rows, NOW) == pytest.approx(reset, abs=1e-3)
    eff = policy.effective(row, rows, NOW)
    assert eff.status == (policy.COOLING if reset > NOW else policy.READY)


@given(age=ages, code=codes)
def test_dead_never_expires(age, code):
    row = exhausted(code, age)
    row["last_status"] = "dead"
    eff = policy.effective(row, [row], NOW + 10 * 365 * 86400)
    assert eff.status == policy.DEAD and not eff.usable
    assert policy.until(row, [row], NOW) == math.inf


@given(code=codes, age=ages, fr=failure_reasons)
def test_effective_is_cooling_exactly_until_until(code, age, fr):
    row = exhausted(code, age, failure_reason=fr)
    rows = [row, ok_row("b", 1)]
    t = policy.until(row, rows, NOW)
    eff = policy.effective(row, rows, NOW)
    if t > NOW:
        assert eff.status == policy.COOLING and eff.seconds_left == pytest.approx(t - NOW, abs=1)
    else:
        assert eff.status == policy.READY and eff.seconds_left is None


def test_no_timestamps_counts_as_available():
    row = exhausted(429, 0)
    row["last_status_at"] = None
    assert policy.until(row, [row], NOW) is None
    assert policy.effective(row, [row], NOW).status == policy.READY


def test_iso_last_status_at_from_old_files_is_accepted():
    row = exhausted(429, 0)
    row["last_status_at"] = datetime.fromtimestamp(NOW - 100, timezone.utc).isoformat()
    assert policy.until(row, [row, ok_row("b", 1)], NOW) == pytest.approx(NOW - 100 + 3600, abs=1)


def test_only_row_rule_ignores_dead_rows_but_not_cooling_ones():
    a = exhausted(429, 0)
    dead = exhausted(401, 0, reason="invalid_grant", rid="d")
    dead["last_status"] = "dead"
    assert policy.until(a, [a, dead], NOW) == pytest.approx(NOW + 60, abs=1)  # only non-dead row
    b = exhausted(429, 0, rid="b")
    assert policy.until(a, [a, b], NOW) == pytest.approx(NOW + 3600, abs=1)  # two live rows


def test_ttls_can_be_overridden_from_config():
    ttls = policy.Ttls.from_mapping({"429": 120, "only_row": 3600})
    a = exhausted(429, 0)
    assert policy.until(a, [a, ok_row("b", 1)], NOW, ttls) == pytest.approx(NOW + 120, abs=1)
    assert policy.until(a, [a], NOW, ttls) == pytest.approx(NOW + 120, abs=1)
    with pytest.raises(ValueError, match="unknown TTL"):
        policy.Ttls.from_mapping({"418": 5})
    with pytest.raises(ValueError, match="number of seconds"):
        policy.Ttls.from_mapping({"429": "soon"})


@given(st.one_of(st.none(), st.just(""), st.just("garbage"), st.just(0), st.just(-5), st.booleans()))
def test_parse_epoch_rejects_nonsense(value):
    assert parse_epoch(value) is None


# --- selection ---------------------------------------------------------------------------------

row_states = st.sampled_from(["ok", "cooling", "ready", "dead"])


def make_pool(states, counts):
    rows = []
    for i, (state, count) in enumerate(zip(states, counts, strict=True)):
        r = ok_row(f"r{i}", prio=i, count=count)
        if state == "cooling":
            r.update(last_status="exhausted", last_status_at=NOW - 10, last_error_code=429,
                     last_error_reset_at=NOW + 600)
        elif state == "ready":
            r.update(last_status="exhausted", last_status_at=NOW - 7200, last_error_code=429)
        elif state == "dead":
            r.update(last_status="dead", last_status_at=NOW - 10, last_error_code=401,
                     last_error_reason="invalid_grant")
        rows.append(r)
    random.Random(len(rows)).shuffle(rows)  # file order must not matter, priority does
    return rows


pools_st = st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.tuples(st.lists(row_states, min_size=n, max_size=n),
                        st.lists(st.integers(0, 50), min_size=n, max_size=n)))


@given(pools_st, st.sampled_from(["fill_first", "round_robin", "random", "least_used", "quota_aware", None]),
       st.integers(0, 2**32))
def test_select_only_picks_usable_rows_and_counts_once(pool, strategy, seed):
    rows = make_pool(*pool)
    usable_before = {r["id"] for r in rows if policy.effective(r, rows, NOW).usable}
    total_before = sum(r["request_count"] for r in rows)
    chosen = policy.select(rows, strategy, NOW, rng=random.Random(seed))
    if not usable_before:
        assert chosen is None
        assert sum(r["request_count"] for r in rows) == total_before
        return
    assert chosen["id"] in usable_before
    assert sum(r["request_count"] for r in rows) == total_before + 1
    assert sorted(r["priority"] for r in rows) == list(range(len(rows))) or strategy != "round_robin"


@given(pools_st)
def test_fill_first_takes_the_first_usable_by_priority(pool):
    rows = make_pool(*pool)
    usable = sorted((r for r in rows if policy.effective(r, rows, NOW).usable), key=lambda r: r["priority"])
    assume(usable)
    assert policy.pick(rows, "fill_first", NOW)["id"] == usable[0]["id"]
    assert policy.pick(rows, "no_such_strategy", NOW)["id"] == usable[0]["id"]


@given(pools_st)
def test_least_used_takes_lowest_count_ties_by_priority(pool):
    rows = make_pool(*pool)
    usable = [r for r in rows if policy.effective(r, rows, NOW).usable]
    assume(usable)
    best = min(usable, key=lambda r: (r["request_count"], r["priority"]))
    assert policy.pick(rows, "least_used", NOW)["id"] == best["id"]


@given(pools_st)
def test_round_robin_moves_the_pick_last_and_renumbers(pool):
    rows = make_pool(*pool)
    usable = [r for r in rows if policy.effective(r, rows, NOW).usable]
    before = {r["id"]: r["priority"] for r in rows}
    chosen = policy.select(rows, "round_robin", NOW)
    if len(usable) > 1:
        assert rows[-1] is chosen
        assert [r["priority"] for r in rows] == list(range(len(rows)))
    else:
        # Like Hermes: one usable row (or none) is not rotated, priorities stay put.
        assert {r["id"]: r["priority"] for r in rows} == before


def test_round_robin_cycles_through_every_usable_key():
    rows = [ok_row("a", 0), ok_row("b", 1), ok_row("c", 2)]
    picks = [policy.select(rows, "round_robin", NOW)["id"] for _ in range(6)]
    assert picks == ["a", "b", "c", "a", "b", "c"]


def test_random_without_rng_has_no_honest_next():
    rows = [ok_row("a", 0), ok_row("b", 1)]
    assert policy.pick(rows, "random", NOW) is None
    assert policy.pick(rows, "random", NOW, rng=random.Random(1)) is not None


def test_leases_prefer_fewest_below_cap_and_never_block():
    rows = [ok_row("a", 0), ok_row("b", 1)]
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 1}, lease_cap=1)["id"] == "b"
    # Everything at the cap: still returns the least-leased one rather than blocking.
    assert policy.pick(rows, "fill_first", NOW, leases={"a": 2, "b": 1}, lease_cap=1)["id"] == "b"


# --- state changes -----------------------------------------------------------------------------

@given(code=codes, reason=reasons, n_siblings=st.integers(0, 3), n_others=st.integers(0, 3))
def test_mark_exhausted_benches_every_row_with_the_same_secret(code, reason, n_siblings, n_others):
    target = ok_row("t")
    siblings = [dict(ok_row(f"s{i}"), access_token=target["access_token"]) for i in range(n_siblings)]
    others = [ok_row(f"o{i}") for i in range(n_others)]
    rows = [target, *siblings, *others]
    changed = policy.mark_exhausted(rows, target, NOW, code=code, reason=reason)
    assert {r["id"] for r in changed} == {"t"} | {s["id"] for s in siblings}
    want = "dead" if policy.terminal_auth_failure(code, reason) else "exhausted"
    assert all(r["last_status"] == want and r["last_status_at"] == NOW for r in changed)
    assert all(r["last_status"] is None for r in others)


def test_terminal_401_reasons_make_the_row_dead_and_others_do_not():
    for reason in policy.DEAD_REASONS:
        assert policy.terminal_auth_failure(401, reason)
    assert not policy.terminal_auth_failure(401, "rate_limit_exceeded")
    assert not policy.terminal_auth_failure(403, "invalid_grant")


@given(code=codes, age=ages, count=st.integers(0, 10_000))
def test_reset_clears_status_stamps_tombstone_and_keeps_request_count(code, age, count):
    row = exhausted(code, age, failure_reason="rate_limit")
    row.update(request_count=count, model_cooldowns={"m": NOW + 5}, model_cooldown_observed_at={"m": NOW},
               unknown_field={"keep": True})
    policy.reset(row, NOW)
    assert all(row[f] is None for f in ("last_status", "last_status_at", "last_error_code",
                                        "last_error_reason", "last_error_message", "last_error_reset_at"))
    assert "failure_reason" not in row and "model_cooldowns" not in row
    assert row["status_cleared_at"] == NOW and row["request_count"] == count
    assert row["unknown_field"] == {"keep": True}
    assert policy.effective(row, [row], NOW).status == policy.OK


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(0, n - 1))))
def test_move_yields_contiguous_priorities_with_the_row_in_place(args):
    n, src, dst = args
    rows = [ok_row(f"r{i}", prio=i * 3) for i in range(n)]
    row = rows[src]
    policy.move(rows, row, dst)
    assert [r["priority"] for r in rows] == list(range(n))
    assert rows[dst] is row


@settings(max_examples=50)
@given(st.floats(min_value=1, max_value=30 * 86400, allow_nan=False))
def test_manual_cooldown_is_honoured_by_until(seconds):
    rows = [ok_row("a"), ok_row("b", 1)]
    policy.manual_cooldown(rows[0], NOW + seconds, NOW, "maintenance")
    assert policy.until(rows[0], rows, NOW) == pytest.approx(NOW + seconds, abs=1)
    assert policy.effective(rows[0], rows, NOW).status == policy.COOLING


def test_clear_elapsed_only_touches_ready_rows():
    rows = make_pool(["ok", "cooling", "ready", "dead"], [0, 0, 0, 0])
    cleared = policy.clear_elapsed(rows, NOW)
    assert [r["last_status"] for r in cleared] == ["ok"]
    statuses = sorted(policy.effective(r, rows, NOW).status for r in rows)
    assert statuses == ["cooling", "dead", "ok", "ok"]
