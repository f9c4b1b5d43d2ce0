"""``proxy.prefer: {pool: soonest_reset}`` (#30): among the usable keys, the one whose
tightest window (the reading with the least left whose reset is known) resets soonest.
Control: without ``prefer``, the pool's strategy picks as before."""

from __future__ import annotations

import pytest

from store.dialects.readings import Reading
from store.pools.view import row_fingerprint
from store.proxy.routing.chain import Chain
from store.proxy.routing.picks import reset_of, soonest_reset
from tests.conftest import make_row, make_store, write_store

NOW = 1_800_000_000.0
KEYS = [f"sk-or-v1-prefertest-{i:030d}" for i in range(3)]
H = 3600.0


def w(window: str, left: float, reset_in: float | None) -> Reading:
    return Reading(window, "anthropic-unified", NOW, utilization=1.0 - left,
                   reset_at=None if reset_in is None else NOW + reset_in)


def chain(home, prefer: bool, strategy: str = "fill_first") -> Chain:
    write_store(home, make_store({"openrouter": [make_row(f"k{i}pref", token=KEYS[i], priority=i,
                                                          base_url="http://127.0.0.1:9/api/v1") for i in range(3)]}))
    home.config.write_text("model:\n  provider: openrouter\n  default: m\n"
                           f"credential_pool_strategies:\n  openrouter: {strategy}\n")
    if prefer:
        (home.root / "hermes-admin.yaml").write_text("proxy:\n  prefer: {openrouter: soonest_reset}\n")
    c = Chain(home, "openrouter", clock=lambda: NOW, env={}, lock_timeout=5.0)
    c.load()
    return c


def read(c: Chain, rid: str, *readings: Reading) -> None:
    row = next(r for r in c._rows["openrouter"] if r["id"] == rid)
    c.headroom.room.record("openrouter", rid, row_fingerprint("openrouter", row, c.env), readings)


def seed_readings(c: Chain) -> None:
    # k0: its tightest window (5h, 20% left) resets in 4 h.
    read(c, "k0pref", w("5h", 0.2, 4 * H), w("7d", 0.9, 1 * H))
    # k1: its tightest (7d, 10% left) resets in 2 days; a roomy 5h resetting in 10 min does not count.
    read(c, "k1pref", w("7d", 0.1, 48 * H), w("5h", 0.8, 600))
    # k2: no reading with a known reset.
    read(c, "k2pref", w("5h", 0.0, None))


def test_soonest_reset_picks_the_key_whose_tightest_window_resets_first(tmp_home) -> None:
    c = chain(tmp_home, prefer=True, strategy="round_robin")
    seed_readings(c)
    picked = [c.select().selection.row_id for _ in range(3)]
    assert picked == ["k0pref"] * 3          # drained first, whatever the round robin would do


def test_control_without_prefer_the_strategy_picks(tmp_home) -> None:
    c = chain(tmp_home, prefer=False, strategy="round_robin")
    seed_readings(c)
    picked = [c.select().selection.row_id for _ in range(3)]
    assert sorted(picked) == ["k0pref", "k1pref", "k2pref"]     # round robin over all three


def test_no_reading_to_go_by_leaves_the_strategy_its_pick(tmp_home) -> None:
    c = chain(tmp_home, prefer=True)
    assert c.select().selection.row_id == "k0pref"     # fill_first's
    read(c, "k2pref", w("7d", 0.5, 2 * H))
    assert c.select().selection.row_id == "k2pref"     # the only known reset


@pytest.mark.parametrize(("readings", "expected"), [
    ((), None),
    ((w("5h", 0.5, None),), None),
    ((w("5h", 0.5, 100), w("7d", 0.1, 900)), NOW + 900),
    ((w("5h", 0.0, 50), w("7d", 0.1, 900)), NOW + 50),
    ((w("5h", 0.0, -5),), None),               # past its reset: stale
])
def test_reset_of(readings, expected) -> None:
    assert reset_of(readings, NOW) == expected


def test_soonest_reset_ties_keep_the_strategy_order() -> None:
    rows = [{"id": "a"}, {"id": "b"}, {"id": "c"}]
    at = {"a": None, "b": 5.0, "c": 5.0}
    assert soonest_reset(rows, lambda r: at[r["id"]])["id"] == "b"
    assert soonest_reset(rows, lambda r: None) is None
