"""A bench written from headroom (#21) is honoured by the real Hermes 0.19.0 pool code: when an
answer said "nothing left until T", the agent runtime writes an ordinary bench to T, and a
Hermes agent on the same home skips the row until T, then picks it again. Short T, bounded
polling; the only check on time is an order (Hermes never picked the row before T)."""

from __future__ import annotations

import time

import pytest

from store.agent.headroom import BENCH_REASON
from store.agent.outcomes import Result
from store.agent.pool_client import PoolClient
from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.hermes_real import wait_for

pytestmark = pytest.mark.hermes

POOL = "openrouter"
KEY_A = "sk-or-v1-interopAAAAAAAAAAAAAAAA0001"
KEY_B = "sk-or-v1-interopBBBBBBBBBBBBBBBB0002"
RESET_IN = 4          # seconds: the provider's "0 remaining, resets in 4s"
EMPTY = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
         "x-ratelimit-reset-requests": f"{RESET_IN}s"}


def seed(home: Home) -> None:
    write_store(home, make_store({POOL: [make_row("aaaaaa", label="alpha", priority=0, token=KEY_A),
                                         make_row("bbbbbb", label="bravo", priority=1, token=KEY_B)]}))


def answer_saying_nothing_left(home: Home, *, use_headroom: bool = True) -> None:
    c = PoolClient(home, POOL, env={}, use_headroom=use_headroom)
    assert c.select().row_id == "aaaaaa"
    c.report(Result(200, EMPTY))


def test_hermes_skips_a_headroom_bench_until_the_reset_then_picks_it(tmp_home: Home, hermes) -> None:
    seed(tmp_home)
    assert hermes.select(POOL)["id"] == "aaaaaa"
    answer_saying_nothing_left(tmp_home)
    row = next(r for r in read_doc(tmp_home)["credential_pool"][POOL] if r["id"] == "aaaaaa")
    assert row["last_error_reason"] == BENCH_REASON and row["last_status"] == "exhausted"
    reset = row["last_error_reset_at"]
    # Hermes's own arithmetic puts the row out until the provider's reset, exactly.
    assert hermes.exhausted_until(POOL)["aaaaaa"] == pytest.approx(reset, abs=1e-3)
    seen: list[tuple[str, float]] = []

    def picks_alpha() -> bool:
        got = hermes.select(POOL)["id"]
        seen.append((got, time.time()))
        return got == "aaaaaa"
    assert wait_for(picks_alpha, timeout=RESET_IN + 30, interval=0.25), seen[-3:]
    assert seen[0][0] == "bbbbbb"                                 # skipped while benched...
    assert all(t >= reset for got, t in seen if got == "aaaaaa")  # ...never picked before T


def test_control_without_headroom_hermes_picks_the_row_at_once(tmp_home: Home, hermes) -> None:
    """Negative control: the same answer with headroom off writes no bench, and Hermes goes
    straight back to the row its provider said is empty (the 429 it would get next)."""
    seed(tmp_home)
    answer_saying_nothing_left(tmp_home, use_headroom=False)
    row = next(r for r in read_doc(tmp_home)["credential_pool"][POOL] if r["id"] == "aaaaaa")
    assert row["last_status"] is None and row.get("last_error_reset_at") is None
    assert hermes.select(POOL)["id"] == "aaaaaa"
    assert hermes.exhausted_until(POOL)["aaaaaa"] is None
