"""The budget filter's rules (#29): ``budgets:`` of hermes-admin.yaml against the tally.

For one row of a pool with a :class:`~store.config.budgets.PoolBudget`, at one moment:

- **key**: the row's known cost today (this month) is at or past ``key.day``
  (``key.month``): refused until the next 00:00 UTC (the 1st of the next month);
- **pool**: the pool's known cost is at or past ``pool.day`` / ``pool.month``: every row is
  refused, so the request goes to the next route of the chain;
- **cap**: the row's newest fresh reading of a window (``5h``, ``7d`` ...) from the headroom
  gate says its utilization is at or past the cap: refused until that window resets;
- **reserve**: rows named (by id or label) in ``reserve`` are no refusal but a hold: they
  are left out of a pick while any other row may serve (:meth:`BudgetRules.held`).

Words are what an operator and a client read (``over budget: $2.00 a day, resets 00:00
UTC``). A budget writes nothing to auth.json: Hermes agents keep their own rules. Pure and
fast (dict lookups): the caller holds the view's lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from store.config.budgets import PERIODS, Limits, PoolBudget
from store.model import Row
from store.pools.view import row_fingerprint
from store.proxy.routing.headroom_gate import HeadroomGate
from store.usage.tally import MONTH, Tally, resets

Why = tuple[float | None, str]      # when it lifts, and the words


def when(period: str, at: float) -> str:
    """When a day or month budget resets, in words: ``00:00 UTC`` or ``1 Jan 00:00 UTC``."""
    return "00:00 UTC" if period != MONTH else time.strftime("%-d %b 00:00 UTC", time.gmtime(at))


def over(limit: float, period: str, reset_at: float, whose: str = "") -> str:
    """``over budget: $2.00 a day, resets 00:00 UTC`` (*whose*: ``pool `` for the pool's)."""
    return f"{whose}over budget: ${limit:,.2f} a {period}, resets {when(period, reset_at)}"


class BudgetRules:
    """The budgets of one proxy (pool -> :class:`PoolBudget`) over its :class:`Tally`."""

    def __init__(self, budgets: Mapping[str, PoolBudget], tally: Tally, headroom: HeadroomGate,
                 env: Mapping[str, str]) -> None:
        self.budgets = budgets
        self.tally = tally
        self.headroom = headroom
        self.env = env
        # pool -> (what it was worked out for, the rows over their key budget): kept until the
        # tally changes, the day or month turns, or the budget is replaced
        self._kept: dict[str, tuple[tuple[Any, ...], frozenset[str]]] = {}

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

    def pool_over(self, pool: str, now: float) -> Why | None:
        """Whether *pool* as a whole is past its pool budget: (when it resets, the words)."""
        b = self.of(pool)
        if b is None or not b.pool.any:
            return None
        return self._over(b.pool, lambda p: self.tally.pool(pool, p, now), now, "pool ")

    def refused(self, pool: str, row: Row, now: float) -> Why | None:
        """Why *row* of *pool* may not serve now by its budget (None: it may)."""
        b = self.of(pool)
        if b is None:
            return None
        rid = str(row.get("id"))
        if b.key.any and (got := self._over(b.key, lambda p: self.tally.key(pool, rid, p, now), now, "")):
            return got
        if b.pool.any and (got := self.pool_over(pool, now)):
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

    def keys_over(self, pool: str, b: PoolBudget, now: float) -> frozenset[str]:
        """The row ids of *pool* at or past *b*'s key budget (worked out again only when the
        tally has changed, the UTC day turned or the budget was replaced)."""
        stamp = (self.tally.version, int(now // 86400), id(b))
        kept = self._kept.get(pool)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        day, month = b.key.day, b.key.month
        over = frozenset(rid for rid, (d, m) in self.tally.spenders(pool, now).items()
                         if (day is not None and d >= day) or (month is not None and m >= month))
        self._kept[pool] = (stamp, over)
        return over

    def held(self, pool: str, allowed: list[Row], already: Collection[str], now: float) -> set[str]:
        """The ids of *allowed* a pick must leave out by budget: every row over its budget or
        cap, and the reserve rows while another row (not in *already*) may serve. Once per
        pick: the tally is asked once for the rows that have spent anything, no words made."""
        b = self.of(pool)
        if b is None:
            return set()
        if b.pool.any and self.pool_over(pool, now) is not None:
            return {str(r.get("id")) for r in allowed}
        over = self.keys_over(pool, b, now) if b.key.any else frozenset()
        out = {rid for r in allowed if (rid := str(r.get("id"))) in over} if over else set()
        if b.cap:
            out |= {str(r.get("id")) for r in allowed if self.capped(pool, r, b.cap, now) is not None}
        if b.reserve:
            rest = [r for r in allowed if str(r.get("id")) not in out and str(r.get("id")) not in already]
            reserve = {str(r.get("id")) for r in rest if self.reserved(b, r)}
            if reserve and len(reserve) < len(rest):
                out |= reserve
        return out

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
