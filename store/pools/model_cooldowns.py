"""Per-model benches as newer Hermes writes them: ``model_cooldowns[model]`` when the bench
ends and ``model_cooldown_observed_at[model]`` when it was seen (spec section 3).

A 429 that a provider scopes to one model benches that (row, model) pair; every other model
keeps using the key, and the row's own status fields are left alone. The reader of these
fields is :func:`store.pools.policy.model_benches` (every effective status needs it); this
module holds the writers, which only the proxy and the agent's per-model paths use.

A row keeps at most :data:`MAX_MODELS` models: the model names come from clients, and a storm
of distinct names must not grow the store without bound. Past the cap, the benches that have
ended go first (the oldest seen first), then the oldest seen.
"""

from __future__ import annotations

from typing import Iterable

from store import outside
from store.model import Row, parse_epoch
from store.pools.policy import BENCH_FLOOR, DEFAULT_TTLS, Ttls, bench_reset, is_only_live_row, secret_key

MAX_MODELS = 32          # models benched per row, at most


def bench_until(rows: Iterable[Row], row: Row, now: float, reset_at: float | None,
                      ttls: Ttls = DEFAULT_TTLS) -> float:
    """When a per-model bench of *row* ends, as newer Hermes computes it (``_cool_down_model``):
    the provider's reset time when it sent one (floored: :func:`bench_reset`), else a 429's
    TTL, cut to the only-row cap when *row* is the pool's only live row."""
    floored = bench_reset(reset_at, now)
    if floored is not None:
        return floored
    ttl = ttls.rate_limit_429
    if is_only_live_row(row, rows):
        ttl = min(ttl, ttls.only_row_cap)
    return now + max(ttl, BENCH_FLOOR)


def bench_model(rows: list[Row], row: Row, model: str, now: float, until_at: float) -> list[Row]:
    """Bench *row* for *model* only (and every row holding the same secret), in the form newer
    Hermes writes: ``model_cooldowns[model]`` the end of the bench and
    ``model_cooldown_observed_at[model]`` when it was seen, each merged with what the row
    already holds (the later wins: each writer saw only its own model). The row's status
    fields are left alone: every other model keeps using the key. Each row keeps at most
    :data:`MAX_MODELS` models (:func:`capped`). Returns the rows changed."""
    until_at = outside.epoch(until_at, "model bench end", now=now) or now + BENCH_FLOOR
    key = secret_key(row)
    targets = [r for r in rows if r is row or (key is not None and secret_key(r) == key)]
    for r in targets:
        cooldowns = r.get("model_cooldowns")
        cooldowns = dict(cooldowns) if isinstance(cooldowns, dict) else {}
        observed = r.get("model_cooldown_observed_at")
        observed = dict(observed) if isinstance(observed, dict) else {}
        cooldowns[model] = max(until_at, parse_epoch(cooldowns.get(model)) or 0.0)
        observed[model] = max(now, parse_epoch(observed.get(model)) or 0.0)
        capped(cooldowns, observed, now, keep=model)
        r["model_cooldowns"] = cooldowns
        r["model_cooldown_observed_at"] = observed
    return targets


def capped(cooldowns: dict[str, object], observed: dict[str, object], now: float, keep: str) -> None:
    """Cut a row's *cooldowns* and *observed* (in place) to :data:`MAX_MODELS` models: the
    benches that have ended first, then the oldest seen; never *keep* (the one just written)."""
    names = set(cooldowns) | set(observed)
    over = len(names) - MAX_MODELS
    if over <= 0:
        return

    def age(name: str) -> tuple[bool, float, float]:
        until = parse_epoch(cooldowns.get(name)) or 0.0
        return (until > now, parse_epoch(observed.get(name)) or 0.0, until)

    for name in sorted((n for n in names if n != keep), key=age)[:over]:
        cooldowns.pop(name, None)
        observed.pop(name, None)
