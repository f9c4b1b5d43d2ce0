"""Choosing a row on the proxy's in-memory view without re-deriving it per request.

``policy.select`` works out, on every call, which rows are usable: it clears elapsed
cooldowns, takes every row's effective status and keeps the eligible ones. Between two
changes of the view those answers change only when the clock reaches the end of a
cooldown or a model bench, so :func:`usable_rows` works them out once, with the moment
they stop holding, and :func:`pick` chooses from them exactly as ``policy.select``
would (same row, same request count, same round-robin move). Pure functions on rows;
the caller holds the view's lock. ``tests/proxy/test_proxy_select.py`` keeps them equal to
``policy.select``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from store.agent import probe
from store.model import Row, as_int, sorted_rows
from store.pools import policy


@dataclass
class Usable:
    """One pool's rows a request may use, in the order its strategy walks them, valid
    while the view's *generation* is unchanged and the clock is before *until*."""

    generation: int
    until: float
    strategy: str
    rows: list[Row]


def usable_rows(rows: list[Row], strategy: str | None, now: float, ttls: policy.Ttls,
                env: Mapping[str, str], generation: int) -> Usable:
    """Clear elapsed cooldowns in *rows* (as ``policy.select`` does) and list the usable
    rows that have a secret, with the soonest moment a cooldown or model bench ends."""
    policy.clear_elapsed(rows, now, ttls)
    ordered = sorted_rows(rows)
    until = math.inf
    usable = []
    for row in ordered:
        eff = policy.effective(row, ordered, now, ttls)
        if eff.available_at is not None and eff.available_at > now:
            until = min(until, eff.available_at)
        for t in eff.model_benches.values():
            until = min(until, t)
        if eff.usable_for(None) and probe.row_secret(row, env):
            usable.append(row)
    return Usable(generation, until, policy.known_strategy(strategy), usable)


def pick(usable: Usable, rows: list[Row], rng: random.Random, weigh: policy.Weigh | None = None) -> Row | None:
    """The strategy's row among *usable*, counted; round_robin moves it to the end of
    *rows* (renumbered) and of *usable*, whose rows keep their relative order. *weigh*:
    ``least_used`` weighs the headroom left (:func:`store.pools.policy.least_used_key`)."""
    if not usable.rows:
        return None
    if usable.strategy == "random":
        chosen = rng.choice(usable.rows)
    elif usable.strategy == "least_used":
        chosen = min(usable.rows, key=policy.least_used_key(weigh))
    else:
        chosen = usable.rows[0]
    chosen["request_count"] = as_int(chosen.get("request_count")) + 1
    if usable.strategy == "round_robin" and len(usable.rows) > 1:
        policy.renumber(rows)
        rows.remove(chosen)
        rows.append(chosen)
        for i, row in enumerate(rows):
            row["priority"] = i
        usable.rows.remove(chosen)
        usable.rows.append(chosen)
    return chosen
