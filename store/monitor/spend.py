"""What a key or a pool has spent, read from the usage ledger for the monitor's ``budget`` rule.

The ledger (``hermes-admin-usage.sqlite`` beside the home, written behind by the proxy and
the agent runtime, table :data:`store.usage.record.REQUESTS_TABLE`) is another program's
file: it is opened read-only (``file:...?mode=ro``), never through a symbolic link, with a
short busy timeout, and only what is known counts: the ``actual`` and ``estimated`` costs
(``included`` and ``unknown`` have no dollars), each finite and not negative. A ledger that
is missing, locked, corrupt or without the table gives ``None`` ("unknown", with a notice),
never zero: a budget rule must not report a key as under budget because it cannot read.

Windows are calendar periods in UTC, as budgets count them: ``day`` since 00:00 UTC,
``month`` since the first of the month. :class:`Spend` reads each (pool, window) once per
evaluation, grouped by key, so a pool of thousands of keys is one query, not thousands.

Per-request rows are kept 7 days (``usage.keep_requests``) and a month is longer: as
``hermes-admin usage`` does (:func:`store.usage.report.spans`), a window's whole hours are
read from the ledger's hourly roll-ups (which keep the cost status) and the per-request rows
only for the hour in progress, in the same query. A roll-up holds a sum, so the bound on one
answer becomes a bound on the sum: an hour's group counts when its cost is finite, not
negative and at most ``MAX_COST`` times its answers (the writer only records costs it
believes: :data:`store.dialects.readings.MAX_COST`). A ledger without roll-ups (no
``hourly`` table: not made by hermes-admin's writer) is read from its rows alone.
"""

from __future__ import annotations

import math
import os
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from store.paths import Home
from store.usage.record import ACTUAL, ESTIMATED, LEDGER_FILE
from store.usage.report import spans
from store.usage.tally import starts

BUSY_TIMEOUT = 0.5
MAX_COST = 1e9          # a single request's cost beyond this is not believed
WINDOWS = ("day", "month")
_KNOWN = (ACTUAL, ESTIMATED)
_STATUS = f"cost_status IN ({', '.join('?' for _ in _KNOWN)}) AND cost_usd >= 0"
_ROWS = (f"SELECT row_id AS r, SUM(cost_usd) AS c FROM requests WHERE pool = ? AND at >= ? AND at < ? "
         f"AND {_STATUS} AND cost_usd <= {MAX_COST:g} GROUP BY row_id")
_HOURS = (f"SELECT nullif(row_id, '') AS r, SUM(cost_usd) AS c FROM hourly WHERE pool = ? AND hour >= ? "
          f"AND hour < ? AND {_STATUS} AND cost_usd <= {MAX_COST:g} * requests GROUP BY row_id")
_QUERY = f"SELECT row_id, SUM(cost_usd) FROM requests WHERE pool = ? AND at >= ? AND at < ? AND {_STATUS} " \
         f"AND cost_usd <= {MAX_COST:g} GROUP BY row_id"       # the rows alone (a ledger without roll-ups)


def window_query(pool: str, start: float, now: float) -> tuple[str, tuple[Any, ...]]:
    """The one query (and its arguments) for the known spend of each key of *pool* from
    *start* to *now*: whole hours from the roll-ups, the rest from the per-request rows
    (:func:`store.usage.report.spans`; the rows are read where the roll-ups are not, so the
    split does not depend on how long they are kept)."""
    hours, rows = spans(start, start, now)
    parts = [(_ROWS, (pool, lo, now + 1.0 if hi is None else hi, *_KNOWN)) for lo, hi in rows]
    if hours is not None:
        parts.append((_HOURS, (pool, *hours, *_KNOWN)))
    if len(parts) == 1:
        return parts[0]
    sql = " UNION ALL ".join(q for q, _ in parts)
    return f"SELECT r, SUM(c) FROM ({sql}) GROUP BY r", tuple(a for _, args in parts for a in args)


def ledger_path(home: Home) -> Any:
    """Where the ledger of *home* lies (it may not exist)."""
    return home.root / LEDGER_FILE


def window_start(window: str, now: float) -> float:
    """The epoch second *window* (``day`` or ``month``, UTC) began at *now*; ValueError otherwise."""
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}")
    return starts(window, now)          # the budgets' own count of a UTC day or month


def by_key(home: Home, pool: str, window: str, *, now: float | None = None,
           notes: list[str] | None = None) -> Mapping[str | None, float] | None:
    """Known spend of each key of *pool* in *window* (row id -> USD; rows without an id under
    None), or None when the ledger cannot be read (a notice appended to *notes*)."""
    now = time.time() if now is None else now
    start = window_start(window, now)
    path = ledger_path(home)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        _note(notes, f"{path}: no usage ledger yet; spend unknown")
        return None
    except OSError as exc:
        _note(notes, f"{path}: cannot be read ({exc.strerror or exc}); spend unknown")
        return None
    if not stat.S_ISREG(st.st_mode):
        _note(notes, f"{path}: not a regular file (a link or special file is never followed); spend unknown")
        return None
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
        try:
            try:
                rows = con.execute(*window_query(pool, start, now)).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table: hourly" not in str(exc):
                    raise
                rows = con.execute(_QUERY, (pool, start, now + 1.0, *_KNOWN)).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        _note(notes, f"{path}: {_why(exc)}; spend unknown")
        return None
    out: dict[str | None, float] = {}
    for row_id, total in rows:
        if total is None:
            continue
        if not isinstance(total, (int, float)) or not math.isfinite(total):
            _note(notes, f"{path}: a spend that is not a finite number; spend unknown")
            return None
        key = row_id if isinstance(row_id, str) else None
        out[key] = out.get(key, 0.0) + float(total)
    return out


def spend_of(home: Home, pool: str, row_id: str | None, window: str, *, now: float | None = None,
             notes: list[str] | None = None) -> float | None:
    """Known spend (USD) of one key of *pool* (*row_id*), or of the whole pool (None), in
    *window* (``day`` / ``month``, UTC); None when the ledger cannot be read: unknown, not zero."""
    got = by_key(home, pool, window, now=now, notes=notes)
    if got is None:
        return None
    return sum(got.values()) if row_id is None else got.get(row_id, 0.0)


class Spend:
    """:func:`spend_of` for one evaluation: each (home, pool, window) read once."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.notes: list[str] = []
        self._cache: dict[tuple[str, str, str], Mapping[str | None, float] | None] = {}

    def __call__(self, home: Home, pool: str, row_id: str | None, window: str) -> float | None:
        key = (str(home.root), pool, window)
        if key not in self._cache:
            self._cache[key] = by_key(home, pool, window, now=self.now, notes=self.notes)
        got = self._cache[key]
        if got is None:
            return None
        return sum(got.values()) if row_id is None else got.get(row_id, 0.0)


def _why(exc: sqlite3.Error) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "locked by its writer"
    if "no such table" in text:
        return "holds no requests table yet"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "is not a readable SQLite database (corrupt?)"
    return f"cannot be read ({type(exc).__name__})"


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None and text not in notes:
        notes.append(text)
