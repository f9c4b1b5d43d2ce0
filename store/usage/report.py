"""Reading the usage ledger back (#29): what each key, model or day spent in a window,
for ``hermes-admin usage`` and the console. Read-only: the ledger is opened ``mode=ro``
and nothing is written (a missing ledger is :class:`FileNotFoundError`, the caller's word).

A window reads the per-request rows where they are still kept (``usage.keep_requests``)
and the hourly roll-ups before that, so a 30-day window holds 30 days.

A group's ``cost_status`` is the least certain of its answers' (``unknown`` before
``estimated`` before ``actual``; ``included`` alone when every answer was a subscription's):
``cost_usd`` is the sum of its costs, None when the status is ``unknown`` or ``included``;
``cost_known_usd`` is the sum of the costs that are known (a floor, when some are not).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.dialects.readings import MAX_COST
from store.outside import MAX_COUNT
from store.usage.ledger import LedgerUnreadable, open_ledger
from store.usage.record import ACTUAL, COST_STATUSES, ESTIMATED, INCLUDED, UNKNOWN

WINDOWS = {"24h": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0}
BY = ("key", "model", "day")
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_CERTAINTY = {ACTUAL: 0, ESTIMATED: 1, UNKNOWN: 2}
_GROUP = {"key": ("row_id", "max(fingerprint)"), "model": ("model", "NULL"),
          "day": ("date(at, 'unixepoch')", "NULL")}
_GROUP_HOURLY = {"key": ("nullif(row_id, '')", "max(nullif(fingerprint, ''))"), "model": ("nullif(model, '')", "NULL"),
                 "day": ("date(hour * 3600, 'unixepoch')", "NULL")}


@dataclass
class Group:
    """What one key (or model, or day) of one pool spent."""

    pool: str
    name: str | None
    fingerprint: str | None = None
    requests: int = 0
    partial: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKENS, 0))
    known_usd: float | None = None
    statuses: set[str] = field(default_factory=set)

    @property
    def cost_status(self) -> str:
        priced = self.statuses - {INCLUDED}
        if not priced:
            return INCLUDED if self.statuses else UNKNOWN
        return max(priced, key=lambda s: _CERTAINTY.get(s, 2))

    @property
    def cost_usd(self) -> float | None:
        return None if self.cost_status in (INCLUDED, UNKNOWN) else self.known_usd

    def add(self, other: Group) -> None:
        self.requests += other.requests
        self.partial += other.partial
        for k in TOKENS:
            self.tokens[k] += other.tokens[k]
        if other.known_usd is not None:
            self.known_usd = (self.known_usd or 0.0) + other.known_usd
        self.statuses |= other.statuses

    def as_json(self, by: str, label: str | None = None) -> dict[str, Any]:
        head: dict[str, Any] = {"id": self.name, "label": label} if by == "key" else (
            {} if by == "total" else {by: self.name})
        return {**head, "requests": self.requests, **self.tokens, "cost_usd": self.cost_usd,
                "cost_status": self.cost_status, "cost_known_usd": self.known_usd, "partial": self.partial}


def _believed(column: str, hi: str, whole: bool) -> str:
    """SQL true when the stored *column* is a number from 0 to *hi* (whole, with *whole*):
    false for a negative, infinite, text or blob value (SQLite stores NaN as NULL)."""
    return (f"(typeof({column}) IN ('integer', 'real') AND {column} BETWEEN 0 AND {hi}"
            + (f" AND {column} = CAST({column} AS INTEGER))" if whole else ")"))


def _count_of(column: str) -> str:
    return f"CASE WHEN {_believed(column, str(MAX_COUNT), True)} THEN {column} END"


def _query(table: str, by: str, pool: str | None, scan: bool = False, upto: bool = False) -> str:
    """One GROUP BY over *table*; *scan*: the window holds most rows, so the ``at`` index
    is not used (a scan reads the table once; the index would fetch each row apart);
    *upto*: the rows end before a second bound (``at < ?``).

    A ledger is another program's file: each stored count and cost is checked row by row,
    before any sum, by the feed's rule (:func:`store.dialects.readings.usage_block`): a
    negative, non-finite or absurd value is dropped (a count not counted; a cost no longer
    known, so that answer's cost status is ``unknown``). Every grouping (key, model, day)
    sums the same checked values, so they agree. A roll-up holds sums: its bounds are the
    answer's times its ``requests``."""
    group, fp = (_GROUP if table == "requests" else _GROUP_HOURLY)[by]
    answers = "1" if table == "requests" else _count_of("requests")
    count = "count(*)" if table == "requests" else f"total({answers})"
    cost_ok = _believed("cost_usd", f"{MAX_COST!r} * {answers}", False)
    status = f"CASE WHEN cost_usd IS NULL OR {cost_ok} THEN cost_status ELSE '{UNKNOWN}' END"
    where = (("+at >= ?" if scan else "at >= ?") + (" AND at < ?" if upto else "")
             if table == "requests" else "hour >= ? AND hour < ?")
    sums = ", ".join(f"total({_count_of(t)})" for t in TOKENS)
    return (f"SELECT pool, {group}, {fp}, {status}, {count}, {sums}, "
            f"sum(CASE WHEN {cost_ok} THEN cost_usd * 1.0 END), total({_count_of('partial')}) "   # reals: no overflow
            f"FROM {table} WHERE {where}{' AND pool = ?' if pool else ''} GROUP BY pool, {group}, {status}")


def spans(since: float, boundary: float, rolled_before: float | None) -> tuple[
        tuple[int, int] | None, list[tuple[float, float | None]]]:
    """Where a window from *since* is read: the hours ``[first, last)`` taken from the
    roll-ups (None: none), and the ``[from, to)`` spans of per-request rows (``to`` None: on
    to the newest row). Together they hold each recorded answer of the window once.

    Per-request rows are all kept from *boundary* on; an hour before it is read whole from
    its roll-up. With *rolled_before*, every whole hour of the window that began before the
    hour of *rolled_before* is read from its roll-up too (one row per key, model, endpoint
    and cost status, instead of one per answer), and the per-request rows only at the
    window's two edges: the part-hour it starts in, and the hour of *rolled_before* on.
    """
    start = max(since, boundary)
    if rolled_before is None:
        hours = (int(since // 3600), int(boundary // 3600)) if since < boundary else None
        return hours, [(start, None)]
    first = int(since // 3600) if since < boundary else -int(-since // 3600)
    last = max(first, int(boundary // 3600), int(rolled_before // 3600))
    if last == first:
        return None, [(start, None)]
    rows: list[tuple[float, float | None]] = [(start, first * 3600.0)] if start < first * 3600 else []
    return (first, last), [*rows, (max(start, last * 3600.0), None)]


def spent_by(conn: sqlite3.Connection, since: float, boundary: float, *, by: str = "key",
             pool: str | None = None, rolled_before: float | None = None) -> dict[str, dict[str | None, Group]]:
    """Per pool, per key (model, day): what was spent since *since*: per-request rows from
    *boundary* on (where they are all kept), hourly roll-ups before it; with
    *rolled_before*, the window's whole hours before that hour from the roll-ups as well
    (:func:`spans`)."""
    out: dict[str, dict[str | None, Group]] = {}
    hours, rows = spans(since, boundary, rolled_before)
    tail = (pool,) if pool else ()
    parts = []
    for lo, hi in rows:
        scan = False
        if hi is None:
            oldest = conn.execute("SELECT min(at) FROM requests").fetchone()[0]       # one index probe
            scan = oldest is None or lo <= oldest + (now_of(conn) - oldest) / 2
        parts.append((_query("requests", by, pool, scan, hi is not None),
                      (lo, *(() if hi is None else (hi,)), *tail)))
    if hours is not None:
        parts.append((_query("hourly", by, pool), (*hours, *tail)))
    for sql, args in parts:
        for row in conn.execute(sql, args):
            p, name, fp, status, n, *rest = row
            tokens, cost, partial = rest[:5], rest[5], rest[6]
            if not isinstance(p, str):
                continue        # a row no writer of ours made (a pool that is not text)
            if status not in COST_STATUSES:
                status = UNKNOWN    # a status no writer of ours made: nothing known of its cost
            g = Group(p, _text(name), _text(fp), _count(n), _count(partial),
                      dict(zip(TOKENS, map(_count, tokens), strict=True)), _dollars(cost), {status})
            groups = out.setdefault(p, {})
            have = groups.get(name)
            if have is None:
                groups[name] = g
            else:
                if have.fingerprint is None:
                    have.fingerprint = fp
                have.add(g)
    return out


def _count(value: Any) -> int:
    """A stored count as a count: 0 for what is not a finite, non-negative number (a hostile
    or damaged ledger is read, never crashed on)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _dollars(value: Any) -> float | None:
    """A stored sum of dollars, or None when it is not a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


def now_of(conn: sqlite3.Connection) -> float:
    """The newest row's time (the window's end as the ledger knows it)."""
    return conn.execute("SELECT max(at) FROM requests").fetchone()[0] or 0.0


def read_usage(path: Path, now: float, window: float, keep_requests: float, *, by: str = "key",
               pool: str | None = None) -> dict[str, dict[str | None, Group]]:
    """:func:`spent_by` on the ledger at *path*, opened read-only. FileNotFoundError: no
    ledger yet; :class:`LedgerUnreadable`: one that cannot be read (corrupt, a link)."""
    conn = open_ledger(path, write=False)
    try:
        boundary = -(-(now - keep_requests) // 3600) * 3600      # the first whole hour still kept per request
        return spent_by(conn, now - window, boundary, by=by, pool=pool, rolled_before=now)
    except sqlite3.Error as exc:
        raise LedgerUnreadable(path, f"cannot be read ({exc})") from None
    finally:
        conn.close()


def totals(groups: Mapping[Any, Group], pool: str) -> Group:
    """The pool's totals over its *groups*."""
    total = Group(pool, None)
    for g in groups.values():
        total.add(g)
    return total


DAY_S = 86400.0
DETAIL_WINDOWS = (("today", None), ("7 days", 7 * DAY_S), ("30 days", 30 * DAY_S))


def spend_today(path: Path, now: float, keep_requests: float) -> dict[tuple[str, str], Group]:
    """Per (pool, row id): what each key spent since 00:00 UTC (the day budgets count), read
    read-only as one aggregate over the ledger at *path*. FileNotFoundError: no ledger yet;
    :class:`LedgerUnreadable`: one that cannot be read."""
    start = (now // DAY_S) * DAY_S
    found = read_usage(path, now, max(0.0, now - start), keep_requests, by="key")
    return {(pool, rid): g for pool, groups in found.items() for rid, g in groups.items() if rid is not None}


def key_windows(path: Path, pool: str, row_id: str, now: float,
                keep_requests: float) -> dict[str, Group | None]:
    """What one key spent today (since 00:00 UTC), in 7 and in 30 days (None: nothing
    recorded), for the console's detail view. Errors as :func:`read_usage`."""
    out: dict[str, Group | None] = {}
    for name, window in DETAIL_WINDOWS:
        span = max(0.0, now - (now // DAY_S) * DAY_S) if window is None else window
        out[name] = read_usage(path, now, span, keep_requests, by="key", pool=pool).get(pool, {}).get(row_id)
    return out


def cache_hit_ratio(group: Group) -> float | None:
    """The share of input tokens read from the provider's cache (cache reads over every input
    token, which counts them: :class:`store.dialects.readings.Usage`); None when no input
    was counted. Never above 1, whatever the ledger holds."""
    t = group.tokens
    total = t["input_tokens"]
    return min(1.0, t["cache_read_tokens"] / total) if total > 0 else None
