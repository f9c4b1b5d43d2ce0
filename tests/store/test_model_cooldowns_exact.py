"""Per-model benches as written (``store.pools.model_cooldowns``), value by value.

``test_model_cooldowns_cap.py`` holds the cap under any history of benches; these pin the
bench's end (the reset floored, else the 429 TTL, cut to the only-row cap for a pool's only
live row), what one bench writes on the row and on every row sharing its secret, how it
merges with what a row already holds (the later wins, either field), a bad end, and the cap
at its exact bound. Negative control: the last test lets the only-row cap apply to any row
and sees a two-key pool's bench cut to 60 s.
"""

from __future__ import annotations

import dataclasses

from store.pools import policy
from store.pools.model_cooldowns import MAX_MODELS, bench_model, bench_until, capped
from tests.conftest import make_row
from tests.mutant import mutant

T = 1_800_000_000.0
KEY = "sk-or-v1-mcexact-" + "a" * 32
KEY2 = "sk-or-v1-mcexact-" + "b" * 32


def test_bench_until_takes_the_reset_floored():
    rows = [make_row("a", token=KEY), make_row("b", token=KEY2)]
    assert bench_until(rows, rows[0], T, T + 42) == T + 42
    assert bench_until(rows, rows[0], T, T + 1) == T + policy.BENCH_FLOOR
    assert bench_until(rows, rows[0], T, T - 100) == T + policy.BENCH_FLOOR


def test_bench_until_without_a_reset_is_the_429_ttl():
    rows = [make_row("a", token=KEY), make_row("b", token=KEY2)]
    assert bench_until(rows, rows[0], T, None) == T + 3600
    ttls = dataclasses.replace(policy.DEFAULT_TTLS, rate_limit_429=120.0, only_row_cap=30.0)
    assert bench_until(rows, rows[0], T, None, ttls) == T + 120


def test_bench_until_of_the_only_live_row_is_cut_to_the_cap():
    rows = [make_row("a", token=KEY), make_row("b", token=KEY2, last_status="dead")]
    assert bench_until(rows, rows[0], T, None) == T + 60
    ttls = dataclasses.replace(policy.DEFAULT_TTLS, rate_limit_429=20.0, only_row_cap=30.0)
    assert bench_until(rows, rows[0], T, None, ttls) == T + 20          # the TTL is shorter
    ttls = dataclasses.replace(policy.DEFAULT_TTLS, only_row_cap=0.0)
    assert bench_until(rows, rows[0], T, None, ttls) == T + policy.BENCH_FLOOR


def test_bench_model_writes_both_fields_on_the_row_and_its_twins():
    a = make_row("a", token=KEY, last_status=None)
    twin = make_row("b", token=KEY)
    other = make_row("c", token=KEY2)
    rows = [a, twin, other]
    changed = bench_model(rows, a, "m", T, T + 90)
    assert changed == [a, twin]
    for r in (a, twin):
        assert r["model_cooldowns"] == {"m": T + 90} and r["model_cooldown_observed_at"] == {"m": T}
    assert "model_cooldowns" not in other and a["last_status"] is None


def test_bench_model_twins_by_fingerprint_and_a_row_with_no_secret_alone():
    a = make_row("a", secret_fingerprint="sha256:x")
    b = make_row("b", secret_fingerprint="sha256:x")
    c = make_row("c")
    d = make_row("d")
    assert bench_model([a, b, c, d], a, "m", T, T + 9) == [a, b]
    assert bench_model([a, b, c, d], c, "m", T, T + 9) == [c]


def test_bench_model_merges_the_later_of_each_field():
    row = make_row("a", token=KEY, model_cooldowns={"m": T + 500, "n": T + 7, "bad": "x"},
                   model_cooldown_observed_at={"m": T + 3, "n": T - 9})
    bench_model([row], row, "m", T, T + 90)
    bench_model([row], row, "n", T, T + 90)
    assert row["model_cooldowns"] == {"m": T + 500, "n": T + 90, "bad": "x"}
    assert row["model_cooldown_observed_at"] == {"m": T + 3, "n": T}


def test_bench_model_replaces_fields_that_are_not_maps():
    row = make_row("a", token=KEY, model_cooldowns=["m"], model_cooldown_observed_at="x")
    bench_model([row], row, "m", T, T + 90)
    assert row["model_cooldowns"] == {"m": T + 90} and row["model_cooldown_observed_at"] == {"m": T}


def test_bench_model_with_an_unusable_end_benches_for_the_floor():
    row = make_row("a", token=KEY)
    bench_model([row], row, "m", T, float("nan"))
    assert row["model_cooldowns"] == {"m": T + policy.BENCH_FLOOR}


def test_bench_model_does_not_change_the_maps_it_read():
    held = {"m": T + 1}
    row = make_row("a", token=KEY, model_cooldowns=held, model_cooldown_observed_at={})
    bench_model([row], row, "n", T, T + 9)
    assert held == {"m": T + 1} and row["model_cooldowns"] is not held


def test_capped_at_the_bound_keeps_everything():
    cool = {f"m{i}": T + 10 for i in range(MAX_MODELS)}
    seen = {f"m{i}": T - i for i in range(MAX_MODELS)}
    capped(cool, seen, T, keep="m0")
    assert len(cool) == len(seen) == MAX_MODELS == 32


def test_capped_one_over_drops_the_oldest_seen_never_the_one_kept():
    cool = {f"m{i}": T + 10 for i in range(MAX_MODELS + 1)}
    seen = {f"m{i}": T - i for i in range(MAX_MODELS + 1)}
    capped(cool, seen, T, keep=f"m{MAX_MODELS}")          # the oldest seen is the one just written
    assert f"m{MAX_MODELS}" in cool and f"m{MAX_MODELS - 1}" not in cool and f"m{MAX_MODELS - 1}" not in seen
    assert len(cool) == MAX_MODELS


def test_capped_drops_ended_benches_first_and_names_in_either_map():
    cool = {f"m{i}": T + 10 for i in range(MAX_MODELS)}
    seen = {f"m{i}": T - 100 + i for i in range(MAX_MODELS)}
    cool["m5"] = T                                          # ends now: ended
    seen["only-seen"] = T - 1
    capped(cool, seen, T, keep="m0")
    assert "m5" not in cool and "m5" not in seen and "only-seen" in seen
    seen["x"] = T
    capped(cool, seen, T, keep="m0")
    assert "only-seen" not in seen                          # no bench at all: ended, goes first
    cool["y"], seen["y"] = T + 10, T + 50
    capped(cool, seen, T, keep="m0")
    assert "x" not in seen and "y" in cool                  # x had no bench: ended
    cool["z"], seen["z"] = T + 10, T + 50
    capped(cool, seen, T, keep="m0")
    assert "m1" not in cool and "m0" in cool                # then the oldest seen, but never keep
    assert len(set(cool) | set(seen)) == MAX_MODELS


# --- negative control -------------------------------------------------------------------------------

def test_control_the_only_row_cap_on_every_row_is_caught():
    broken = mutant("store.pools.model_cooldowns", "    if is_only_live_row(row, rows):\n", "    if True:\n")
    rows = [make_row("a", token=KEY), make_row("b", token=KEY2)]
    assert broken.bench_until(rows, rows[0], T, None) == T + 60          # the slip
    assert bench_until(rows, rows[0], T, None) == T + 3600
