"""The proxy's selection fast path picks exactly what ``policy.select`` would.

The chain keeps each pool's usable rows between requests instead of re-deriving every
row's status per request. Driven side by side with ``policy.select`` on a copy of the
same rows, through cooldowns and model benches that end, a bench, a reload and an env
change, it must choose the same row every time and leave the rows identical (counts,
round-robin priorities, cleared cooldowns). The control keeps the list past the moment a
cooldown ends and must be caught.
"""

from __future__ import annotations

import copy
import random

import pytest

from store.agent import probe
from store.agent.judge import judge
from store.agent.outcomes import Result, reset_time
from store.paths import Home
from store.pools import policy
from store.proxy.routing import chain as chain_mod
from store.proxy.routing.chain import Chain
from tests.conftest import make_row, make_store

T0 = 1_700_000_000.0
KEYS = [f"sk-or-v1-selecttest-{i:030d}" for i in range(7)]
STRATEGIES = ("fill_first", "round_robin", "least_used", "random")


def _rows() -> list[dict]:
    return [
        # a 429 benched an hour ago, minus 20 s: its TTL ends at T0 + 20
        make_row("a", token=KEYS[0], priority=0, last_status="exhausted", last_status_at=T0 - 3580,
                 last_error_code=429),
        make_row("b", token=KEYS[1], priority=1, request_count=5),
        # the provider's reset time: reopens at T0 + 30
        make_row("c", token=KEYS[2], priority=2, last_status="exhausted", last_status_at=T0,
                 last_error_code=429, last_error_reset_at=T0 + 30),
        # a per-model bench until T0 + 50 blocks a caller that names no model
        make_row("d", token=KEYS[3], priority=3, model_cooldowns={"m": T0 + 50},
                 model_cooldown_observed_at={"m": T0}),
        make_row("e", priority=4, source="env:SELECTTEST_BORROWED"),    # no secret until the env has it
        make_row("f", token=KEYS[5], priority=5, last_status="dead"),
        make_row("g", token=KEYS[6], priority=6, request_count=2),
    ]


def _diverges(home: Home, strategy: str) -> list[str]:
    """Run both side by side; return what differed (empty: the same every step)."""
    home.config.write_text(f"model:\n  provider: openrouter\ncredential_pool_strategies:\n  openrouter: {strategy}\n")
    now = [T0]
    chain = Chain(home, "openrouter", clock=lambda: now[0], env={})
    chain.rng = random.Random(7)
    chain.load_doc(make_store({"openrouter": _rows()}))
    mirror = copy.deepcopy(chain._rows["openrouter"])
    rng = random.Random(7)
    ttls = chain._ttls
    diffs = []
    for step in range(140):
        now[0] = T0 + step * 0.5
        got = chain.select()
        want = policy.select(mirror, strategy, now[0], ttls, rng=rng,
                             eligible=lambda r: bool(probe.row_secret(r, chain.env)))
        got_id = got.selection.row_id if got is not None else None
        want_id = str(want.get("id")) if want is not None else None
        if got_id != want_id or chain._rows["openrouter"] != mirror:
            diffs.append(f"step {step} (t+{step * 0.5:g}): fast {got_id}, policy {want_id}")
        if step == 70 and got is not None:          # a 429 benches the row just used
            result = Result(429, message="rate limited")
            chain.bench_in_view(got.selection, result, judge(result, now[0]), "rate_limit")
            row = next(r for r in mirror if r.get("id") == got_id)
            policy.mark_exhausted(mirror, row, now[0], code=429, message=result.message,
                                  reset_at=reset_time(result, now[0]), failure_reason="rate_limit")
        if step == 90:          # counts written behind, then the watcher reloads the view
            chain.counts.clear()
            chain.load_doc(make_store({"openrouter": copy.deepcopy(mirror)}))
        if step == 100:                               # .env now holds the borrowed secret
            chain.set_env({"SELECTTEST_BORROWED": "sk-or-v1-borrowed-" + "0" * 24})
    return diffs


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_fast_path_picks_what_policy_select_picks(tmp_home, strategy):
    assert _diverges(tmp_home, strategy) == []


def test_control_a_list_kept_past_a_cooldown_end_is_caught(tmp_home, monkeypatch):
    real = chain_mod.usable_rows

    def never_expires(*args, **kw):
        usable = real(*args, **kw)
        usable.until = float("inf")
        return usable

    monkeypatch.setattr(chain_mod, "usable_rows", never_expires)
    assert _diverges(tmp_home, "fill_first"), "a stale list went unnoticed"
