"""What each key and each pool has spent today and this month, in memory (#29's budgets).

A :class:`Tally` is a listener of the usage feed: a plain callable taking a
:class:`~store.usage.record.Spent`. It adds the answer's known cost (``actual`` and
``estimated``; an ``included`` or ``unknown`` answer adds nothing) to its row's and its pool's
current UTC day and month. The proxy's eligibility check reads it under the view's lock, so
reading is a few dict lookups and never does IO; the tally's own lock is held only for
those lookups and additions.

At the proxy's start :meth:`Tally.seed` reads today's and this month's known cost from the
usage ledger (read-only, :func:`ledger_cost`: the per-request rows of
:data:`~store.usage.record.REQUESTS_TABLE` where they are kept, the ledger's hourly roll-ups
for the month's hours before them, so a month budget still counts the days the rows' prune
took). A missing, locked or corrupt ledger is a notice: the tally starts at zero for what it
could not read, and says so.

With ``--fleet`` (:mod:`store.usage.fleet`) every host's spend is added up in Redis; the
tally then holds, per row and day, the fleet's total as last read and what this host has
spent since (:meth:`Tally.owed`, :meth:`Tally.settle`), and per row the fleet's total of this
month's earlier days (:meth:`Tally.settle_month`), which a month budget counts as well.
"""

from __future__ import annotations

import calendar
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from store.usage.record import ACTUAL, ESTIMATED, Spent

DAY, MONTH = "day", "month"
KNOWN = (ACTUAL, ESTIMATED)
_DAY_S = 86400.0

Period = tuple[str, int]        # ("day", days since the epoch) or ("month", year * 12 + month - 1)
DayKey = tuple[str, str, int]   # (pool, row id, day)


def day_of(at: float) -> int:
    """The UTC day *at* falls in (days since the epoch)."""
    return int(at // _DAY_S)


def month_of(at: float) -> int:
    """The UTC month *at* falls in (year * 12 + month - 1)."""
    t = time.gmtime(at)
    return t.tm_year * 12 + t.tm_mon - 1


def period_of(period: str, at: float) -> Period:
    """The day or month (*period*) *at* falls in."""
    return (DAY, day_of(at)) if period == DAY else (MONTH, month_of(at))


def starts(period: str, at: float) -> float:
    """When the UTC day or month *at* falls in began (epoch seconds)."""
    if period == DAY:
        return day_of(at) * _DAY_S
    t = time.gmtime(at)
    return float(calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0)))


def resets(period: str, at: float) -> float:
    """When the UTC day or month *at* falls in ends: the next 00:00 UTC, or the 1st of the next month."""
    if period == DAY:
        return (day_of(at) + 1) * _DAY_S
    t = time.gmtime(at)
    year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    return float(calendar.timegm((year, month, 1, 0, 0, 0)))


def known_cost(spent: Spent) -> float | None:
    """The dollars *spent* counts against a budget: its cost when known (actual or
    estimated), finite and not negative; else None."""
    cost = spent.cost_usd
    if spent.cost_status not in KNOWN or isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None


class Tally:
    """Known cost per row and per pool, for the current UTC day and month."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        # (pool, row id or None for the pool) -> {period: dollars}; only the newest day and month kept
        self._spent: dict[tuple[str, str | None], dict[Period, float]] = {}
        # (pool, row id, day) -> the fleet's total as last read; what this host spent since
        self._fleet: dict[DayKey, float] = {}
        self._owed: dict[DayKey, float] = {}
        self._rows_of: dict[str, set[str]] = {}     # pool -> the row ids with any spend (local or fleet)
        # (pool, row id or None for the pool) -> the fleet's total of this month's days before
        # the day read on; valid while that day is today (_before_span: first day of the month, today)
        self._before: dict[tuple[str, str | None], float] = {}
        self._before_span: tuple[int, int] | None = None
        self._month_of_day: tuple[int | None, int] = (None, 0)     # the last day added to, and its month
        self.version = 0        # bumped by every change: a reader may keep what it worked out until then
        self._generations: dict[str, int] = {}     # pool -> its own change counter (see generation())
        self.notices: list[str] = []

    # -- in --

    def __call__(self, spent: Spent) -> None:
        """Take one answer's :class:`Spent` (the usage feed's listener)."""
        cost = known_cost(spent)
        if cost is None or not cost:
            return
        self.add(spent.pool, spent.row_id, cost, spent.at)

    def add(self, pool: str, row_id: str | None, cost: float, at: float, *, owed: bool = True) -> None:
        """Add *cost* dollars to *row_id*'s and *pool*'s day and month at *at* (*owed*: also
        to what this host owes the fleet's counters)."""
        d = day_of(at)
        known = self._month_of_day            # (day, its month): a month is asked of gmtime once a day
        if known[0] == d:
            m = known[1]
        else:
            m = month_of(at)
            self._month_of_day = (d, m)
        day, month = (DAY, d), (MONTH, m)
        with self._lock:
            self.version += 1
            self._bump(pool)
            for key in ((pool, None), (pool, row_id)) if row_id is not None else ((pool, None),):
                got = self._spent.get(key)
                if got is None:
                    got = self._spent[key] = {}
                got[day] = got.get(day, 0.0) + cost
                got[month] = got.get(month, 0.0) + cost
                if len(got) > 2:         # a new day or month: the older ones are no longer asked for
                    newest = {kind: max(n for k, n in got if k == kind) for kind, _n in got}
                    for old in [p for p in got if p[1] < newest[p[0]]]:
                        del got[old]
            if row_id is not None:
                rows = self._rows_of.get(pool)
                if rows is None:
                    rows = self._rows_of[pool] = set()
                rows.add(row_id)
                if owed:
                    k = (pool, row_id, d)
                    self._owed[k] = self._owed.get(k, 0.0) + cost

    def _bump(self, pool: str) -> None:
        self._generations[pool] = self._generations.get(pool, 0) + 1

    # -- out (pure, no IO: checked under the view's lock) --

    def generation(self, pool: str) -> int:
        """*pool*'s change counter: it moves whenever what :meth:`key`, :meth:`spenders` or
        :meth:`pool` answer for *pool* may have changed (an answer's cost, the fleet's totals),
        so a reader may keep what it worked out from them until it moves (or the UTC day or
        month turns: the counter does not move at midnight)."""
        return self._generations.get(pool, 0)

    def key(self, pool: str, row_id: str, period: str, now: float) -> float:
        """What row *row_id* of *pool* has spent in the *period* (day or month) of *now* (with
        the fleet's counters: see :meth:`_row`)."""
        day, month = period_of(DAY, now), period_of(MONTH, now)
        with self._lock:
            d, m = self._row(pool, row_id, day, month)
        return d if period == DAY else m

    def _row(self, pool: str, row_id: str, day: Period, month: Period) -> tuple[float, float]:
        """(today, this month) of one row; hold ``_lock``. With the fleet's counters read for
        today, today is their total plus what this host spent since, and the month gains what
        the fleet spent today beyond this host (earlier days: this host's own)."""
        got = self._spent.get((pool, row_id))
        d, m = (got.get(day, 0.0), got.get(month, 0.0)) if got else (0.0, 0.0)
        k = (pool, row_id, day[1])
        if k in self._fleet:
            fleet = self._fleet[k] + self._owed.get(k, 0.0)
            if fleet > d:
                d, m = fleet, m + fleet - d
        if (pool, row_id) in self._before:
            m = self._with_earlier(pool, row_id, day[1], d, m)
        return d, m

    def _with_earlier(self, pool: str, row_id: str | None, today: int, d: float, m: float) -> float:
        """This month for one row (or the pool, *row_id* None), given today's *d* and the
        local month *m*: at least the fleet's earlier days this month (plus what this host
        still owes for yesterday: a sync keeps nothing owed older) and today; hold ``_lock``.
        The local figure stays the floor (a hash lost in Redis never lowers what this host
        knows it spent). One lookup for a row: a pick asks it for every row that spent."""
        span = self._before_span
        if span is None or span[1] != today or (pool, row_id) not in self._before:
            return m
        yesterday = today - 1
        if yesterday < span[0]:
            owed = 0.0
        elif row_id is not None:
            owed = self._owed.get((pool, row_id, yesterday), 0.0)
        else:
            owed = sum(v for k, v in self._owed.items() if k[0] == pool and k[2] == yesterday)
        return max(m, self._before[(pool, row_id)] + owed + d)

    def spenders(self, pool: str, now: float) -> dict[str, tuple[float, float]]:
        """Every row of *pool* that has spent anything: (today, this month), as :meth:`key`
        says; one lock, no row without spend (what a pick asks, once per pick)."""
        day, month = period_of(DAY, now), period_of(MONTH, now)
        with self._lock:
            return {rid: self._row(pool, rid, day, month) for rid in self._rows_of.get(pool, ())}

    def pool(self, pool: str, period: str, now: float) -> float:
        """What *pool* as a whole has spent in the *period* of *now* (with the fleet's
        counters where read, today's and this month's earlier days', as :meth:`key`)."""
        p = period_of(period, now)
        with self._lock:
            local = self._spent.get((pool, None), {}).get(p, 0.0)
            if period == DAY:
                return self._pool_day(pool, p[1]) if self._fleet else local
            # The month as a row's: the fleet's today beyond this host's, then its earlier days.
            today = day_of(now)
            local_day = self._spent.get((pool, None), {}).get((DAY, today), 0.0)
            day = self._pool_day(pool, today) if self._fleet else local_day
            return self._with_earlier(pool, None, today, day, local + max(0.0, day - local_day))

    def _pool_day(self, pool: str, day: int) -> float:
        """The pool's *day*: the local figure, or the fleet's counters plus what this host
        owes where read; hold ``_lock``."""
        local = self._spent.get((pool, None), {}).get((DAY, day), 0.0)
        fleet = sum(v for k, v in self._fleet.items() if k[0] == pool and k[2] == day)
        owed = sum(v for k, v in self._owed.items() if k[0] == pool and k[2] == day)
        return max(local, fleet + owed) if fleet or owed else local

    # -- the fleet's counters (store.usage.fleet) --

    def owed(self) -> dict[DayKey, float]:
        """What this host has spent and not yet added to the fleet's counters: (pool, row, day) -> $."""
        with self._lock:
            return {k: v for k, v in self._owed.items() if v}

    def settle(self, paid: dict[DayKey, float], totals: Iterable[tuple[DayKey, float]]) -> None:
        """*paid* has been added to the fleet's counters, and *totals* read back from them
        (after the additions): take both in."""
        with self._lock:
            self.version += 1
            for k, v in paid.items():
                self._bump(k[0])
                left = self._owed.get(k, 0.0) - v
                if left > 1e-12:
                    self._owed[k] = left
                else:
                    self._owed.pop(k, None)
            for k, v in totals:
                if self._fleet.get(k) != v:
                    self._bump(k[0])
                self._fleet[k] = v
                self._rows_of.setdefault(k[0], set()).add(k[1])
            today = day_of(self.clock())
            for store in (self._fleet, self._owed):
                for k in [k for k in store if k[2] < today - 1]:
                    self._bump(k[0])
                    del store[k]

    def settle_month(self, span: tuple[int, int], totals: Iterable[tuple[DayKey, float]]) -> None:
        """The fleet's counters of this month's earlier days, read back: *span* is (the
        month's first day, today) and *totals* every (pool, row, day) -> dollars read for the
        days from the first to yesterday (all of them: what is not there is no spend)."""
        first, today = span
        before: dict[tuple[str, str | None], float] = {}
        for (pool, row_id, day), usd in totals:
            if first <= day < today:
                for k in ((pool, row_id), (pool, None)):
                    before[k] = before.get(k, 0.0) + usd
        with self._lock:
            self.version += 1
            self._before, self._before_span = before, (first, today)
            for pool, row_id in before:
                if row_id is not None:
                    self._rows_of.setdefault(pool, set()).add(row_id)

    # -- seeding from the ledger --

    def seed(self, ledger: Path) -> str | None:
        """Start from the ledger's known cost for today and this month (read-only). Returns
        a notice when the ledger could not be read (the tally then starts at zero)."""
        now = self.clock()
        since = min(starts(DAY, now), starts(MONTH, now))
        try:
            conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=0.5)
        except sqlite3.Error as exc:
            return self._notice(ledger, exc)
        try:
            got = ledger_cost(conn, since, resets(DAY, now))
        except sqlite3.Error as exc:
            return self._notice(ledger, exc)
        finally:
            conn.close()
        for pool, row_id, day, cost in got:
            if isinstance(pool, str) and isinstance(cost, int | float) and math.isfinite(cost) and cost > 0:
                self.add(pool, row_id if isinstance(row_id, str) else None, float(cost), day * _DAY_S, owed=False)
        return None

    def _notice(self, ledger: Path, exc: Exception) -> str:
        text = (f"the usage ledger {ledger.name} could not be read ({type(exc).__name__}: {exc}); "
                f"budgets count from zero for today and this month")
        self.notices.append(text)
        return text


_ROWS_COST = ("SELECT pool, row_id, CAST(at / 86400 AS INTEGER) AS day, SUM(cost_usd) FROM requests "
              "WHERE at >= ? AND at < ? AND cost_status IN (?, ?) AND cost_usd >= 0 GROUP BY pool, row_id, day")
_HOURS_COST = ("SELECT pool, nullif(row_id, ''), hour / 24 AS day, SUM(cost_usd) FROM hourly "
               "WHERE hour >= ? AND hour < ? AND cost_status IN (?, ?) AND cost_usd >= 0 GROUP BY pool, row_id, day")


def ledger_cost(conn: sqlite3.Connection, since: float, until: float) -> list[tuple[object, object, object, object]]:
    """Known cost per (pool, row id, UTC day) from *since* to *until* (whole hours), read
    from the ledger on *conn*: the per-request rows for what they still hold, and for the
    hours before the oldest of them (pruned after ``usage.keep_requests``, 7 days by default,
    while a month is longer) the hourly roll-ups. The hour the oldest row falls in may have
    lost its first answers to the prune: it counts the larger of its roll-up and its rows
    (the roll-up holds them all; a ledger with rows and no roll-ups, the rows)."""
    rows = conn.execute(_ROWS_COST, (since, until, *KNOWN)).fetchall()
    oldest = conn.execute("SELECT min(at) FROM requests").fetchone()[0]
    last = -int(-until // 3600)
    edge = min(last, int(oldest // 3600)) if isinstance(oldest, int | float) else last
    if edge * 3600 <= since or not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hourly'").fetchone():
        return rows                       # the rows hold the whole window (or there are no roll-ups)
    out: dict[tuple, float] = {}
    for p, r, d, c in [*rows, *conn.execute(_HOURS_COST, (int(since // 3600), edge, *KNOWN))]:
        if isinstance(c, int | float):
            out[(p, r, d)] = out.get((p, r, d), 0.0) + c
    if edge < last:
        rolled = {(p, r, d): c for p, r, d, c in conn.execute(_HOURS_COST, (edge, edge + 1, *KNOWN))}
        kept = {(p, r, d): c for p, r, d, c in conn.execute(_ROWS_COST, (edge * 3600.0, edge * 3600.0 + 3600,
                                                                           *KNOWN))}
        for k in rolled.keys() | kept.keys():
            a, b = (v if isinstance(v, int | float) else 0.0 for v in (rolled.get(k), kept.get(k)))
            out[k] = out.get(k, 0.0) + max(a, b) - b          # the rows' part is already counted
    return [(*k, c) for k, c in out.items()]
