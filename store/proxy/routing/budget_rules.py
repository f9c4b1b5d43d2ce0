"""The budget filter's rules (#29): ``budgets:`` of hermes-admin.yaml against the tally.

For one row of a pool with a :class:`~store.config.budgets.PoolBudget`, at one moment:

- **key**: the row's known cost today (this month) is at or past ``key.day``
  (``key.month``): refused until the next 00:00 UTC (the 1st of the next month);
- **pool**: the pool's known cost is at or past ``pool.day`` / ``pool.month``: every row is
  refused, so the request goes to the next route of the chain;
- **cap**: the row's newest fresh reading of a window (``5h``, ``7d`` ...) from the headroom
  gate says its utilization is at or past the cap: refused until that window resets;
- **reserve**: rows named (by id or label) in ``reserve`` are no refusal but a hold: they
  are left out of a pick while any other row may serve this request, in selection and in a
  rotation after a failure alike (:meth:`BudgetRules.held`, :meth:`BudgetRules.another_serves`:
  the rule in words there).

Words are what an operator and a client read (``over budget: $2.00 a day, resets 00:00
UTC``). A budget writes nothing to auth.json: Hermes agents keep their own rules. Pure and
fast (dict lookups): the caller holds the view's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from store.config.budgets import PERIODS, Limits, PoolBudget
from store.model import Row
from store.pools.view import row_fingerprint
from store.proxy.routing.headroom_gate import HeadroomGate
from store.usage.tally import DAY, MONTH, Tally, resets, starts

Why = tuple[float | None, str]      # when it lifts, and the words


def when(period: str, at: float) -> str:
    """When a day or month budget resets, in words: ``00:00 UTC`` or ``1 Jan 00:00 UTC``."""
    return "00:00 UTC" if period != MONTH else time.strftime("%-d %b 00:00 UTC", time.gmtime(at))


def over(limit: float, period: str, reset_at: float, whose: str = "") -> str:
    """``over budget: $2.00 a day, resets 00:00 UTC`` (*whose*: ``pool `` for the pool's)."""
    return f"{whose}over budget: ${limit:,.2f} a {period}, resets {when(period, reset_at)}"


@dataclass(frozen=True)
class Kept:
    """One pool's budget state as worked out from the tally, kept while the tally's
    generation for the pool and the budget are unchanged and the clock is in [*lo*, *hi*)
    (the UTC day and month it was worked out in)."""

    stamp: tuple[int, int]
    lo: float
    hi: float
    pool_over: Why | None
    over: frozenset[str]        # row ids at or past the key budget (the rows that spent anything)
    every: bool                 # a key budget of $0: every row is over, spent or not


class BudgetRules:
    """The budgets of one proxy (pool -> :class:`PoolBudget`) over its :class:`Tally`.

    What a pick asks is worked out once and kept per pool (:meth:`kept`, :meth:`reserve_ids`):
    the rows over their key budget and the pool's own state until the tally's generation for
    the pool moves, the UTC day or month turns or the budget is replaced; the reserve rows
    until the view's generation moves. Window caps read the headroom readings, which change
    with every answer: they are asked per pick, and only of pools with a cap.
    """

    def __init__(self, budgets: Mapping[str, PoolBudget], tally: Tally, headroom: HeadroomGate,
                 env: Mapping[str, str]) -> None:
        self.budgets = budgets
        self.tally = tally
        self.headroom = headroom
        self.env = env
        self._kept: dict[str, Kept] = {}
        self._reserve: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
        self._union: dict[str, tuple[Collection[str], frozenset[str], frozenset[str]]] = {}
        self.worked_out = 0     # how often a pool's state was worked out afresh (the tests' window on the cache)

    def of(self, pool: str) -> PoolBudget | None:
        """*pool*'s budget (None: none, or budgets are off)."""
        return self.budgets.get(pool) if self.budgets else None

    def _over(self, limits: Limits, spent: Callable[[str], float], now: float, whose: str) -> Why | None:
        for period in PERIODS:
            limit = limits.of(period)
            if limit is not None and spent(period) >= limit:
                at = resets(period, now)
                return at, over(limit, period, at, whose)
        return None

    def fresh(self, kept: Kept, pool: str, b: PoolBudget, now: float) -> bool:
        """Whether *kept* still holds for *pool* under *b* at *now*."""
        return kept.lo <= now < kept.hi and kept.stamp == (self.tally.generation(pool), id(b))

    def kept(self, pool: str, b: PoolBudget, now: float) -> Kept:
        """*pool*'s budget state under *b* at *now*: worked out again only when the tally's
        generation for the pool moved, the UTC day or month turned, or *b* was replaced."""
        got = self._kept.get(pool)
        if got is not None and self.fresh(got, pool, b, now):
            return got
        self.worked_out += 1
        stamp = (self.tally.generation(pool), id(b))      # before reading: a change meanwhile re-works it
        lo, hi = max(starts(DAY, now), starts(MONTH, now)), min(resets(DAY, now), resets(MONTH, now))
        pool_over = (self._over(b.pool, lambda p: self.tally.pool(pool, p, now), now, "pool ")
                     if b.pool.any else None)
        day, month = b.key.day, b.key.month
        every = (day is not None and day <= 0) or (month is not None and month <= 0)
        over = frozenset(rid for rid, (d, m) in self.tally.spenders(pool, now).items()
                         if (day is not None and d >= day) or (month is not None and m >= month)) \
            if b.key.any and not every else frozenset()
        got = self._kept[pool] = Kept(stamp, lo, hi, pool_over, over, every)
        return got

    def pool_over(self, pool: str, now: float) -> Why | None:
        """Whether *pool* as a whole is past its pool budget: (when it resets, the words)."""
        b = self.of(pool)
        if b is None or not b.pool.any:
            return None
        return self.kept(pool, b, now).pool_over

    def refused(self, pool: str, row: Row, now: float) -> Why | None:
        """Why *row* of *pool* may not serve now by its budget (None: it may)."""
        b = self.of(pool)
        if b is None:
            return None
        rid = str(row.get("id"))
        if b.key.any:
            k = self.kept(pool, b, now)
            if (k.every or rid in k.over) and (
                    got := self._over(b.key, lambda p: self.tally.key(pool, rid, p, now), now, "")):
                return got
            if k.pool_over is not None:
                return k.pool_over
        elif b.pool.any and (got := self.pool_over(pool, now)):
            return got
        if b.cap:
            return self.capped(pool, row, b.cap, now)
        return None

    def capped(self, pool: str, row: Row, cap: Mapping[str, float], now: float) -> Why | None:
        """A window whose fresh reading's utilization is at or past its cap."""
        readings = self.headroom.room.readings(pool, str(row.get("id")), row_fingerprint(pool, row, self.env))
        for r in readings:
            frac = cap.get(r.window)
            if frac is not None and r.utilization is not None and r.utilization >= frac and not r.stale(now):
                reset = "" if r.reset_at is None else time.strftime(", resets %H:%M UTC", time.gmtime(r.reset_at))
                return r.reset_at, f"over its cap: {r.window} window at {r.utilization:.0%}, cap {frac:.0%}{reset}"
        return None

    def reserved(self, b: PoolBudget, row: Row) -> bool:
        """Whether *row* is one of *b*'s reserve rows (by id or label)."""
        return bool(b.reserve) and (str(row.get("id")) in b.reserve or str(row.get("label") or "") in b.reserve)

    def reserve_ids(self, pool: str, b: PoolBudget, rows: list[Row], generation: int) -> frozenset[str]:
        """The ids of *rows* (the view's, at its *generation*) that are *b*'s reserve rows,
        kept until the view's generation moves or the budget is replaced."""
        stamp = (generation, id(b))
        got = self._reserve.get(pool)
        if got is not None and got[0] == stamp:
            return got[1]
        ids = frozenset(str(r.get("id")) for r in rows if isinstance(r, dict) and self.reserved(b, r))
        self._reserve[pool] = (stamp, ids)
        return ids

    def _both(self, pool: str, over: Collection[str], reserve: frozenset[str]) -> frozenset[str]:
        """*over* and *reserve* as one set, the same object while both are (a pick keeps
        what it cut by it: :attr:`store.proxy.routing.picks.Usable.cut`)."""
        got = self._union.get(pool)
        if got is not None and got[0] is over and got[1] is reserve:
            return got[2]
        both = frozenset(over) | reserve
        self._union[pool] = (over, reserve, both)
        return both

    def keys_over(self, pool: str, b: PoolBudget, now: float) -> frozenset[str]:
        """The row ids of *pool* that spent anything and are at or past *b*'s key budget (kept:
        see :meth:`kept`; a budget of $0 holds every row: :attr:`Kept.every`)."""
        return self.kept(pool, b, now).over

    def held(self, pool: str, allowed: list[Row], now: float, *, rows: list[Row] | None = None,
             generation: int = -1, headroom: Callable[[list[Row]], Collection[str]] | None = None) -> Collection[str]:
        """The ids a pick among *allowed* must leave out by budget, and by *headroom* (the
        gate's holds, asked about the rows the budget leaves): every row over its budget or
        cap, and the reserve rows while any other row may serve. *rows*, *generation*: the
        view's rows and generation, which the reserve ids are kept for (default: *allowed*,
        worked out afresh). A superset of what it leaves out of *allowed* may be returned
        (ids not in *allowed*): the pick only asks whether a row's id is in it.

        The reserve rule (#29, "used only when every other key is out or over budget"): a
        reserve row serves only when no other row may serve this request: every other row is
        refused by a filter of the one eligibility check (cooling, benched for the model,
        behind an open breaker, out by its headroom readings, over its budget or cap, or
        already failed on by this request). A soft headroom hold (at the threshold, or its
        count spent by requests in flight) leaves a row usable: it yields to rows with room,
        and serves before a reserve row."""
        b = self.of(pool)
        if b is None:
            return headroom(allowed) if headroom is not None else frozenset()
        k = self.kept(pool, b, now) if (b.key.any or b.pool.any) else None
        if k is not None and (k.pool_over is not None or k.every):
            return {str(r.get("id")) for r in allowed}
        over: Collection[str] = k.over if k is not None else frozenset()
        if b.cap:
            over = set(over) | {str(r.get("id")) for r in allowed if self.capped(pool, r, b.cap, now) is not None}
        reserve = self.reserve_ids(pool, b, allowed if rows is None else rows,
                                   generation if rows is not None else -1) if b.reserve else frozenset()
        if rows is None:
            self._reserve.pop(pool, None)        # worked out from *allowed*: not to be kept
        if not reserve and headroom is None:
            return over
        if headroom is None:        # the common case, kept cheap: no list built, the same set each pick
            # from the end: round robin moves the rows that serve there, so one is met at once
            if any((rid := str(r.get("id"))) not in over and rid not in reserve for r in reversed(allowed)):
                return self._both(pool, over, reserve)
            return over
        normal = [r for r in allowed if (rid := str(r.get("id"))) not in over and rid not in reserve]
        h = headroom(normal) if normal else frozenset()
        if reserve and any(str(r.get("id")) not in h for r in normal):
            return set(over) | reserve | set(h)      # another row serves: the reserve waits
        # No other row may serve (none left, or every one out by headroom: a soft hold holds
        # nothing when no row is free of holds): the reserve rows, under their own headroom.
        spare = [r for r in allowed if str(r.get("id")) in reserve] if reserve else []
        return set(over) | set(h) | set(headroom(spare) if headroom is not None and spare else ())

    def describe(self, pool: str | None, rows: list[Row], now: float) -> dict[str, Any] | None:
        """The pool's budget state for the status file (None: the pool has no budget): known
        cost today and this month, its limits, per row refused by the budget the words why
        (``rows_over``), and in words what is over for the pool (``over``: None when nothing)."""
        b = self.of(pool) if pool else None
        if b is None or pool is None:
            return None
        rows = [r for r in rows if isinstance(r, dict)]
        rows_over = {str(r.get("id")): why[1] for r in rows if (why := self.refused(pool, r, now)) is not None}
        pool_over = self.pool_over(pool, now)
        if pool_over is not None:
            words: str | None = pool_over[1]
        elif rows_over and len(rows_over) >= len(rows):
            words = "over budget: every key"
        elif rows_over:
            words = f"over budget: {len(rows_over)} of {len(rows)} keys"
        else:
            words = None
        return {"day_usd": round(self.tally.pool(pool, "day", now), 6),
                "month_usd": round(self.tally.pool(pool, MONTH, now), 6),
                "key": {"day": b.key.day, "month": b.key.month}, "pool": {"day": b.pool.day, "month": b.pool.month},
                "cap": dict(b.cap), "reserve": list(b.reserve), "over": words, "rows_over": rows_over}
