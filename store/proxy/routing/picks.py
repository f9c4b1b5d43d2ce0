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

import bisect
import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from store.agent import probe
from store.agent.ratelimits import tightest
from store.dialects.readings import Reading
from store.model import Row, as_int, priority_of, sorted_rows
from store.pools import least_used, policy, view
from store.pools.view import row_fingerprint

Prefer = Callable[[list[Row]], "Row | None"]     # proxy.prefer's choice among the rows a pick may use


@dataclass
class Usable:
    """One pool's rows a request may use, in the order its strategy walks them, valid
    while the view's *generation* is unchanged and the clock is before *until*."""

    generation: int
    until: float
    strategy: str
    rows: list[Row]                  # usable by a request naming no model (no model bench at all)
    every: list[Row] = field(default_factory=list)   # usable rows, model benches or not, in order
    benches: dict[int, dict[str, float]] = field(default_factory=dict)   # id(row) -> its model benches
    # the pool's rows (the view's list) are in priority order, numbered 0..n-1: set by a
    # round-robin pick, valid while this list is kept (the view's generation unchanged)
    numbered: bool = False
    # (the ids a hold named, *rows* less them, in the same order): kept while the hold
    # answers with the same object (a budget's kept set), rotated with *rows*
    cut: tuple[Collection[str], list[Row]] | None = None
    moved: int | None = None        # the priority the last round-robin pick moved from
    # every usable row by id, and which of them are in *rows* (built on first ask; membership
    # never changes while the list is kept, only order). None: ids repeat, look in order.
    by_id: dict[str, Row] | None = None
    in_rows: frozenset[int] = frozenset()
    in_every: frozenset[int] = frozenset()
    _indexed: bool = False

    def row_of(self, rid: str) -> Row | None | bool:
        """The usable row (in *every* or *rows*) whose id is *rid*, None: none; False: not
        known this way (ids repeat in the pool: the caller looks in order)."""
        if not self._indexed:
            self._indexed = True
            rows = self.every if self.every is not self.rows else []
            index = {str(r.get("id")): r for r in (*rows, *self.rows)}
            self.by_id = index if len(index) == len({id(r) for r in (*rows, *self.rows)}) else None
            self.in_rows = frozenset(id(r) for r in self.rows)
            self.in_every = frozenset(id(r) for r in self.every)
        if self.by_id is None:
            return False
        return self.by_id.get(rid)


def usable_rows(rows: list[Row], strategy: str | None, now: float, ttls: policy.Ttls,
                env: Mapping[str, str], generation: int) -> Usable:
    """Clear elapsed cooldowns in *rows* (as ``policy.select`` does) and list the usable
    rows that have a secret, with the soonest moment a cooldown or model bench ends."""
    policy.clear_elapsed(rows, now, ttls)
    ordered = sorted_rows(rows)
    until = math.inf
    usable, every, benches = [], [], {}
    for row in ordered:
        eff = view.judge(row, ordered, now, ttls, env)     # a renewed secret (admin era): afresh
        if eff.available_at is not None and eff.available_at > now:
            until = min(until, eff.available_at)
        for t in eff.model_benches.values():
            until = min(until, t)
        if eff.usable and probe.row_secret(row, env):
            every.append(row)
            if eff.model_benches:
                benches[id(row)] = eff.model_benches
            else:
                usable.append(row)
    return Usable(generation, until, policy.known_strategy(strategy), usable, every, benches)


def candidates(usable: Usable, model: str | None) -> list[Row]:
    """The rows of *usable* a request for *model* may use: every usable row not benched for
    that model (``policy.available(model=...)``); a request naming no model gets only the
    rows with no model bench at all, as newer Hermes does."""
    if model is None or not usable.benches:
        return usable.rows
    return [r for r in usable.every if model not in usable.benches.get(id(r), ())]


def pick(usable: Usable, rows: list[Row], rng: random.Random, weigh: least_used.Weigh | None = None) -> Row | None:
    """The strategy's row among *usable*, counted; round_robin moves it to the end of
    *rows* (renumbered) and of *usable*, whose rows keep their relative order. *weigh*:
    ``least_used`` weighs the headroom left (:func:`store.pools.least_used.least_used_key`)."""
    usable.moved = None
    if not usable.rows:
        return None
    if usable.strategy == "random":
        chosen = rng.choice(usable.rows)
    elif usable.strategy == "least_used":
        chosen = min(usable.rows, key=least_used.least_used_key(weigh))
    else:
        chosen = usable.rows[0]
    chosen["request_count"] = as_int(chosen.get("request_count")) + 1
    if usable.strategy == "round_robin" and len(usable.rows) > 1:
        usable.moved = to_end_renumbered(rows, chosen, usable.numbered)
        usable.numbered = True
        _to_end(usable.rows, chosen, usable.moved)
        if usable.benches and usable.every is not usable.rows:
            _to_end(usable.every, chosen, usable.moved)      # the rows with model benches keep the same order
        if usable.cut is not None:
            _to_end(usable.cut[1], chosen, usable.moved)
    return chosen


def to_end_renumbered(rows: list[Row], chosen: Row, numbered: bool = False) -> int:
    """Round robin's move (Hermes's): *rows* sorted by priority (stable), *chosen* moved to
    the end, priorities renumbered 0..n-1; returns *chosen*'s place before the move.
    *numbered*: *rows* are known to be in that form already (the last move made it), so the
    sort is skipped, *chosen*'s place is its priority, and only the rows from there on are
    renumbered: the same rows, order and numbers."""
    if not numbered:
        policy.renumber(rows)
    j = chosen.get("priority") if numbered else None
    if not (isinstance(j, int) and 0 <= j < len(rows) and rows[j] is chosen):
        j = next((i for i, row in enumerate(rows) if row is chosen), None)
    if j is None:                           # not one of *rows* (never so from the chain)
        raise ValueError("the row chosen is not one of the pool's rows")
    del rows[j]
    rows.append(chosen)
    for i in range(j, len(rows)):
        rows[i]["priority"] = i
    return j


def _to_end(kept: list[Row], chosen: Row, was: int | None = None) -> None:
    """Move *chosen* to the end of *kept* (a list in priority order). *was*: its priority
    before :func:`to_end_renumbered` moved it: the rows before it in *kept* are numbered
    below that and the rows after it at or above, so a bisection finds it."""
    if kept and kept[-1] is chosen:
        return
    if was is not None:
        i = bisect.bisect_left(kept, was, key=priority_of)
        if i < len(kept) and kept[i] is chosen:
            del kept[i]
            kept.append(chosen)
            return
    for i, row in enumerate(kept):
        if row is chosen:
            del kept[i]
            kept.append(chosen)
            return


def rotated(usable: Usable, chosen: Row) -> None:
    """After :func:`choose` rotated a copy (round_robin among filtered rows: *chosen* went
    to the end of the pool's rows, renumbered), move *chosen* to the end of *usable*'s kept
    lists too, so they follow the priorities again, as :func:`usable_rows` would list them
    afresh (the other rows kept their relative order). Cheaper than working the list out
    again on the next pick, which judges every row."""
    if usable.moved is None:               # the pick moved nothing (one row to choose from)
        return
    usable.numbered = True
    _to_end(usable.rows, chosen, usable.moved)
    if usable.every is not usable.rows:
        _to_end(usable.every, chosen, usable.moved)
    if usable.cut is not None:
        _to_end(usable.cut[1], chosen, usable.moved)


def choose(usable: Usable, rows: list[Row], rng: random.Random, model: str | None,
           keep: Callable[[Row], bool] | None, *, weigh: least_used.Weigh | None = None,
           hold: Callable[[list[Row]], Collection[str]] | None = None,
           prefer: Prefer | None = None, pin: str | None = None) -> tuple[Row | None, bool, bool]:
    """:func:`pick` among the rows of *usable* a request for *model* may use (see
    :func:`candidates`) that *keep* allows (None: all), less the ids *hold* names among them
    (the headroom gate's: readings that say a key has nothing left). Returns the row, whether
    usable rows were held back (by *keep*, *hold*, or benched for *model* only: the route
    still serves others), and whether the kept round-robin order no longer follows the
    priorities (the caller then moves the row in *usable*: :func:`rotated`). *weigh*: as for :func:`pick`. *pin*: the id
    of a conversation's pinned row (:mod:`store.proxy.routing.pins`), taken (counted, the
    strategy's order unchanged) when it is among the allowed rows. Else *prefer*
    (``proxy.prefer``, :func:`preferred`) chooses among the rows left when it has a choice;
    when it has none (no reading to go by), the strategy picks."""
    base = candidates(usable, model)
    if base is usable.rows and keep is None and hold is None and prefer is None and pin is None:
        return pick(usable, rows, rng, weigh), False, False
    allowed = base if keep is None else [r for r in base if keep(r)]
    held_ids: Collection[str] = ()
    if hold is not None and allowed and (held_ids := hold(allowed)):
        if allowed is usable.rows and usable.cut is not None and usable.cut[0] is held_ids:
            allowed = usable.cut[1]         # the same hold as the last pick's: its cut, kept in order
        else:
            allowed = [r for r in allowed if str(r.get("id")) not in held_ids]
            if base is usable.rows and keep is None:
                usable.cut = (held_ids, allowed)
    if pin is not None and (chosen := _pinned(usable, allowed, base, model, keep, held_ids, pin)):
        chosen["request_count"] = as_int(chosen.get("request_count")) + 1
        return chosen, len(allowed) < len(base) or (model is not None and len(base) < len(usable.every)), False
    if prefer is not None and (chosen := prefer(allowed)) is not None:
        chosen["request_count"] = as_int(chosen.get("request_count")) + 1
        return chosen, len(allowed) < len(base) or (model is not None and len(base) < len(usable.every)), False
    if base is usable.rows and len(allowed) == len(base):
        return pick(usable, rows, rng, weigh), False, False
    copy = Usable(usable.generation, usable.until, usable.strategy,
                  allowed if usable.cut is not None and allowed is usable.cut[1] else list(allowed),
                  numbered=usable.numbered)
    chosen = pick(copy, rows, rng, weigh)
    usable.numbered, usable.moved = copy.numbered, copy.moved
    held = len(allowed) < len(base) or (model is not None and len(base) < len(usable.every))
    return chosen, held, chosen is not None and usable.strategy == "round_robin"


def _pinned(usable: Usable, allowed: list[Row], base: list[Row], model: str | None,
            keep: Callable[[Row], bool] | None, held_ids: Collection[str], pin: str) -> Row | None:
    """The row of *allowed* whose id is *pin* (None: not among them), found by id, not by
    walking *allowed*: a usable row is in *allowed* when it is one of *base* (a request for
    *model* may use it, :func:`candidates`), *keep* allows it and no hold named it."""
    row = usable.row_of(pin)
    if row is False:                      # ids repeat: the first in order, as a walk finds it
        return next((r for r in allowed if str(r.get("id")) == pin), None)
    if row is None or (keep is not None and not keep(row)) or (held_ids and pin in held_ids):
        return None
    if base is usable.rows:
        return row if id(row) in usable.in_rows else None
    return row if id(row) in usable.in_every and model not in usable.benches.get(id(row), ()) else None


# --- proxy.prefer (#30): which key to drain first ---------------------------------------------------


def reset_of(readings: Iterable[Reading], now: float) -> float | None:
    """When a key's tightest window resets: of its fresh readings whose reset is known, the
    one with the least left (None: no such reading)."""
    r = tightest((r for r in readings if r.reset_at is not None), now)
    return None if r is None else r.reset_at


def soonest_reset(rows: list[Row], reset: Callable[[Row], float | None]) -> Row | None:
    """The row of *rows* whose tightest window resets soonest (ties: the first, in the
    strategy's order); None when no row's reset is known."""
    best, when = None, math.inf
    for row in rows:
        t = reset(row)
        if t is not None and t < when:
            best, when = row, t
    return best


def preferred(gate: Any, pool: str, env: Mapping[str, str], now: float) -> Prefer | None:
    """*pool*'s ``proxy.prefer`` rule over the readings of *gate* (the proxy's
    :class:`~store.proxy.routing.headroom_gate.HeadroomGate`), or None: the strategy alone.
    ``soonest_reset``: a key whose window resets soon loses nothing by being used up first,
    and the others keep their room for later (Hermes's four strategies are unchanged)."""
    if gate.settings.proxy.prefer.get(pool) != "soonest_reset":
        return None
    room = gate.room
    return lambda rows: soonest_reset(rows, lambda r: reset_of(
        room.readings(pool, str(r.get("id")), row_fingerprint(pool, r, env)), now))
