"""What a fleet state asks of a local row (store.fleet.local.plan), without Redis.

Host time = server time + offset; the offset here is +100 s to show that every
comparison goes through it.
"""

from __future__ import annotations

import pytest

from store.fleet.keys import fleet_fingerprint
from store.fleet.local import apply_bench, apply_states, local_rows, plan
from store.fleet.model import FleetState
from store.pools import policy
from tests.conftest import make_row, make_store

OFF = 100.0
NOW = 1_800_000_000.0          # host clock
SNOW = NOW - OFF               # the server's clock at the same instant
KEY = "sk-or-v1-localplanKEY000000000000000001"
SECRET = b"local-plan-secret-0123456789"
FP = fleet_fingerprint(SECRET, "token:" + KEY)


def benched(since: float, until: float) -> FleetState:
    return FleetState(FP, status="exhausted", until=until, since=since, host="host-a", code=429,
                      reason="rate_limit_exceeded", message="quota", version=3)


def cleared(at: float) -> FleetState:
    return FleetState(FP, status="ok", cleared_at=at, cleared_by="host-b", version=4)


def one(**fields):
    row = make_row("aaaaaa", token=KEY, **fields)
    return row, [row, make_row("bbbbbb", priority=1, token="sk-or-v1-other000000000000000000002")]


def test_a_fleet_bench_lands_as_a_hermes_cooldown_in_host_time():
    row, rows = one()
    fs = benched(SNOW - 5, SNOW + 600)
    assert plan(row, rows, fs, OFF, NOW) == "bench"
    apply_bench(row, fs, OFF)
    assert row["last_status"] == "exhausted" and row["last_error_code"] == 429
    assert row["last_error_reset_at"] == pytest.approx(NOW + 600)
    assert row["last_status_at"] == pytest.approx(NOW - 5)
    assert "host-a" in row["last_error_message"]
    assert policy.until(row, rows, NOW) == pytest.approx(NOW + 600)
    assert plan(row, rows, fs, OFF, NOW) is None            # applied once, then nothing to do


def test_expired_or_shorter_fleet_benches_change_nothing():
    row, rows = one(last_status="exhausted", last_status_at=NOW - 1, last_error_reset_at=NOW + 900)
    assert plan(row, rows, benched(SNOW - 2, SNOW + 300), OFF, NOW) is None
    assert plan(row, rows, benched(SNOW - 2000, SNOW - 1), OFF, NOW) is None
    assert plan(row, rows, benched(SNOW - 2, SNOW + 1800), OFF, NOW) == "bench"   # re-cooling extends


def test_a_fleet_reset_clears_only_benches_observed_before_it():
    before, rows = one(last_status="exhausted", last_status_at=NOW - 10, last_error_reset_at=NOW + 900)
    assert plan(before, rows, cleared(SNOW - 5), OFF, NOW) == "clear"
    after, rows2 = one(last_status="exhausted", last_status_at=NOW - 1, last_error_reset_at=NOW + 900)
    assert plan(after, rows2, cleared(SNOW - 5), OFF, NOW) is None
    # Negative control: read raw, this host's fast clock makes the earlier bench look later.
    assert plan(before, rows, cleared(SNOW - 5), 0.0, NOW) is None


def test_a_local_reset_newer_than_the_fleet_bench_is_not_overwritten():
    row, rows = one(status_cleared_at=NOW - 1)
    assert plan(row, rows, benched(SNOW - 5, SNOW + 600), OFF, NOW) is None
    assert plan(row, rows, benched(SNOW - 0.5, SNOW + 600), OFF, NOW) == "bench"


def test_dead_outranks_cooldowns_and_only_a_reset_clears_it():
    row, rows = one(last_status="exhausted", last_status_at=NOW - 1, last_error_reset_at=NOW + 900)
    dead = FleetState(FP, status="dead", since=SNOW - 1, host="host-a", code=401, reason="token_revoked")
    assert plan(row, rows, dead, OFF, NOW) == "bench"
    apply_bench(row, dead, OFF)
    assert row["last_status"] == "dead" and row["last_error_reset_at"] is None
    assert plan(row, rows, benched(SNOW, SNOW + 99999), OFF, NOW) is None
    assert plan(row, rows, cleared(SNOW), OFF, NOW) == "clear"


def test_apply_states_touches_every_row_holding_the_key_and_nothing_else():
    doc = make_store({"openrouter": [make_row("aaaaaa", token=KEY), make_row("cccccc", priority=1, token=KEY),
                                     make_row("bbbbbb", priority=2, token="sk-or-v1-other000000000000000000002")],
                      "custom:x": [make_row("dddddd", token=KEY)]})
    changed = apply_states(doc, SECRET, {}, {FP: benched(SNOW - 1, SNOW + 60)}, OFF, NOW)
    assert sorted((p, r["id"]) for p, r, _ in changed) == [("custom:x", "dddddd"), ("openrouter", "aaaaaa"),
                                                           ("openrouter", "cccccc")]
    assert doc["credential_pool"]["openrouter"][2]["last_status"] is None
    rows = local_rows(doc, SECRET, {}, NOW)
    assert {lr.fp for lr in rows if lr.status == "exhausted"} == {FP}
    assert all(KEY not in repr(lr) for lr in rows)


def test_env_rows_are_identified_by_the_key_they_borrow():
    doc = make_store({"openrouter": [make_row("eeeeee", source="env:OPENROUTER_API_KEY")]})
    assert local_rows(doc, SECRET, {}, NOW) == []
    (lr,) = local_rows(doc, SECRET, {"OPENROUTER_API_KEY": KEY}, NOW)
    assert lr.fp == FP
