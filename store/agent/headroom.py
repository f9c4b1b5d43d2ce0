"""Headroom: each key's rate-limit readings, kept per row and written behind to a sidecar.

The proxy and the agent runtime record the readings of every response against the row
that served it (:meth:`Headroom.record`). Readings live in memory, keyed by pool and row
id and bound to the row's secret by its display fingerprint (a re-keyed row starts
afresh). At most once a second they are written behind, merged with what other
processes on the home wrote, to ``<home>/hermes-admin-headroom.json``: atomic, 0600, no
link followed, never a secret. Never to auth.json: Hermes agents must not see churn for
readings. The console and every proxy on the home read the sidecar with :func:`load`,
which checks every value like any outside input; a running process takes in what the
others wrote with :meth:`Headroom.follow`.

What the readings decide (:func:`hold`, :func:`held_back`): a key whose provider said
"nothing left until T" is held until T (never sooner than the store's bench floor after the
reading: :func:`store.agent.ratelimits.reopens_at`), whatever else happens but an operator's
reset of the row (readings taken before it say nothing); a key at or under the
pool's threshold (hermes-admin's own settings; 0 by default) yields to any key above it
and is still used when none is.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import safeio
from store.agent.ratelimits import blocked_until, reopens_at, tightest
from store.authfile import atomic_write_bytes
from store.dialects.readings import Reading
from store.errors import HermesAdminError, LockTimeout, StoreUnreadable
from store.lock import locked
from store.paths import Home

SIDECAR = "hermes-admin-headroom.json"
SIDECAR_LOCK = ".hermes-admin-headroom.lock"
SIDECAR_CAP = 8 * 1024 * 1024
FLUSH_INTERVAL = 1.0
# A reading older than this is dropped from the file, stale or not.
KEEP_FOR = 8 * 86400.0
MAX_WINDOWS = 16

RowKey = tuple[str, str]        # (pool, row id)

# The bench a 2xx that said "nothing left until T" writes (an ordinary 429 bench to T).
BENCH_REASON = "headroom_exhausted"
BENCH_MESSAGE = "{what}, said the provider's rate-limit headers; benched by hermes-admin until the reset"


@dataclass(frozen=True)
class Hold:
    """Why a key is held back by its readings, and until when."""

    until: float
    exhausted: bool          # nothing left (True), or only at/under the threshold (False)
    reading: Reading         # the window that decides

    def describe(self) -> str:
        """Operator words, e.g. ``nothing left in the requests window`` (the time is shown apart)."""
        r = self.reading
        if self.exhausted:
            return f"nothing left in the {r.window} window"
        left = r.left if r.left is not None else 0.0
        return f"{left:.0%} left in the {r.window} window, at or under the pool's threshold"


def hold(readings: Iterable[Reading], now: float, threshold: float = 0.0) -> Hold | None:
    """The hold *readings* put on a key at *now* (None: it may be picked).

    Nothing left with a reset still to come holds the key until that reset; with a
    *threshold* above 0, a window at or under it holds it as well, but only as a yield
    (:func:`held_back` still uses it when nothing else is left).
    """
    readings = list(readings)
    for limit, exhausted in ((0.0, True), (threshold, False)):
        until = blocked_until(readings, now, limit, floored=True) if limit > 0 or exhausted else None
        if until is not None:
            deciding = next(r for r in readings if reopens_at(r) == until and r.left is not None and r.left <= limit)
            return Hold(until, exhausted, deciding)
    return None


def held_back(holds: Mapping[str, Hold], candidates: Iterable[str]) -> set[str]:
    """Which of *candidates* (row ids) must not be picked now: every exhausted one, and
    those under the threshold when some candidate is under no hold at all."""
    hard = {k for k, h in holds.items() if h.exhausted}
    soft = {k for k, h in holds.items() if not h.exhausted}
    if soft and any(c not in hard and c not in soft for c in candidates):
        return hard | soft
    return hard


@dataclass
class RowReadings:
    """What is known of one row's windows: the secret's fingerprint and the newest reading per window."""

    fp: str | None
    windows: dict[str, Reading] = field(default_factory=dict)

    def merge(self, readings: Iterable[Reading]) -> bool:
        changed = False
        for r in readings:
            old = self.windows.get(r.window)
            if old is None or r.read_at >= old.read_at:
                if old != r:
                    changed = True
                self.windows[r.window] = r
        if len(self.windows) > MAX_WINDOWS:
            keep = sorted(self.windows.values(), key=lambda x: x.read_at)[-MAX_WINDOWS:]
            self.windows = {r.window: r for r in keep}
        return changed

    def newest(self) -> float:
        return max((r.read_at for r in self.windows.values()), default=0.0)


def sidecar_path(home: Home) -> Path:
    return home.root / SIDECAR


class Headroom:
    """One process's readings for one home, and their write-behind."""

    def __init__(self, home: Home, clock: Callable[[], float] = time.time,
                 interval: float = FLUSH_INTERVAL) -> None:
        self.home = home
        self.clock = clock
        self.interval = interval
        self.rows: dict[RowKey, RowReadings] = {}
        self._dirty = False
        self._last_flush = 0.0
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None   # the sidecar as last read or written here
        self.notices: list[str] = []
        self._cleared: dict[RowKey, float] = {}   # an operator's reset per row: older readings say nothing

    def record(self, pool: str, row_id: str, fp: str | None, readings: Iterable[Reading]) -> None:
        """Readings of one response, against the row that served it (in memory only)."""
        readings = list(readings)
        if not readings:
            return
        with self._lock:
            entry = self.rows.get((pool, row_id))
            if entry is None or entry.fp != fp:
                entry = self.rows[(pool, row_id)] = RowReadings(fp)
            if entry.merge(readings):
                self._dirty = True

    @property
    def pending(self) -> bool:
        """Readings not written yet (a flush would write)."""
        return self._dirty

    def readings(self, pool: str, row_id: str, fp: str | None) -> list[Reading]:
        """The row's readings bound to *fp*, less those taken before an operator's reset of it."""
        with self._lock:
            entry = self.rows.get((pool, row_id))
            if entry is None or entry.fp != fp:
                return []
            cleared = self._cleared.get((pool, row_id)) if self._cleared else None
            return [r for r in entry.windows.values() if cleared is None or r.read_at > cleared]

    def cleared(self, pool: str, row_id: str, at: float) -> bool:
        """An operator reset the row at *at* (its ``status_cleared_at``, spec section 5): the
        readings taken before it hold it no more (they stay in the sidecar, for what was
        said). True when *at* is newer than any reset known of the row."""
        with self._lock:
            if at <= self._cleared.get((pool, row_id), float("-inf")):
                return False
            self._cleared[(pool, row_id)] = at
            return True

    def blocked_until(self, pool: str, row_id: str, fp: str | None, now: float,
                      threshold: float = 0.0) -> float | None:
        """When this row may be picked again by its readings (None: it may be now)."""
        return blocked_until(self.readings(pool, row_id, fp), now, threshold)

    def hold(self, pool: str, row_id: str, fp: str | None, now: float, threshold: float = 0.0) -> Hold | None:
        """:func:`hold` of this row's readings (bound to the secret *fp*)."""
        return hold(self.readings(pool, row_id, fp), now, threshold)

    def left(self, pool: str, row_id: str, fp: str | None, now: float) -> float | None:
        """The share of the tightest fresh window left (None: no fresh reading says)."""
        r = tightest(self.readings(pool, row_id, fp), now)
        return None if r is None else r.left

    def bound(self) -> list[tuple[RowKey, str | None]]:
        """Every row with readings and the secret they are bound to (a snapshot)."""
        with self._lock:
            return [(key, entry.fp) for key, entry in self.rows.items()]

    def row_ids(self, pool: str) -> list[str]:
        """The rows of *pool* with readings (whatever their secret)."""
        with self._lock:
            return [rid for p, rid in self.rows if p == pool]

    def follow(self) -> bool:
        """Take in the sidecar when another process replaced it since this one last read or
        wrote it; True when it did. Never raises: a file that cannot be used is a notice."""
        ident = _ident(sidecar_path(self.home))
        if ident is None or ident == self._seen:
            return False
        try:
            other = load(self.home, self.clock())
        except HermesAdminError as exc:
            self._notice(f"headroom sidecar not read: {exc}")
            return False
        self._seen = ident
        self.absorb(other)
        return True

    def absorb(self, other: dict[RowKey, RowReadings]) -> None:
        """Take in what another process on the home read (from :func:`load`)."""
        with self._lock:
            for key, theirs in other.items():
                mine = self.rows.get(key)
                if mine is not None and mine.fp == theirs.fp:
                    mine.merge(theirs.windows.values())
                elif mine is None or theirs.newest() > mine.newest():   # re-keyed: the newer secret's
                    self.rows[key] = RowReadings(theirs.fp, dict(theirs.windows))

    def flush(self, force: bool = False) -> bool:
        """Write behind, at most once per interval: merge with the file and replace it.

        Takes the sidecar's own lock (never auth.lock), and skips this round if another
        process holds it; the next round writes. Never raises: a failure is a notice.
        """
        now = self.clock()
        with self._lock:
            if not self._dirty or (not force and now - self._last_flush < self.interval):
                return False
            self._last_flush = now
        try:
            with locked(self.home.root / SIDECAR_LOCK, timeout=0.0 if not force else 1.0):
                self.absorb(load(self.home, now))
                with self._lock:
                    data = dump(self.rows, now)
                    self._dirty = False
                atomic_write_bytes(sidecar_path(self.home), data, sync=False, follow_link=False)
                self._seen = _ident(sidecar_path(self.home))
            return True
        except LockTimeout:       # another writer has it: the next round writes
            with self._lock:
                self._dirty = True
            return False
        except HermesAdminError as exc:
            with self._lock:
                self._dirty = True
            self._notice(f"headroom not written: {exc}")
            return False

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        del self.notices[:-20]


def _ident(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def dump(rows: dict[RowKey, RowReadings], now: float) -> bytes:
    out = []
    for (pool, rid), entry in sorted(rows.items()):
        windows = [r.as_json() for r in entry.windows.values() if now - r.read_at <= KEEP_FOR]
        if windows:
            out.append({"pool": pool, "id": rid, "fp": entry.fp, "readings": windows})
    return json.dumps({"version": 1, "written_at": now, "rows": out}, allow_nan=False).encode()


def load(home: Home, now: float) -> dict[RowKey, RowReadings]:
    """The sidecar's readings, each checked; {} when there is none. A file that cannot be
    used (special file, oversize, not JSON) raises StoreUnreadable naming it."""
    path = sidecar_path(home)
    got = safeio.read_checked(path, SIDECAR_CAP)
    if got is None:
        return {}
    try:
        doc = json.loads(got[0], parse_constant=_refuse)
    except (ValueError, RecursionError):
        raise StoreUnreadable(path, "is not valid JSON") from None
    rows: dict[RowKey, RowReadings] = {}
    entries = doc.get("rows") if isinstance(doc, dict) else None
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict):
            continue
        pool, rid, fp, readings = e.get("pool"), e.get("id"), e.get("fp"), e.get("readings")
        if not (_short_text(pool) and _short_text(rid) and (fp is None or _short_text(fp))
                and isinstance(readings, list)):
            continue
        checked = [r for r in (Reading.from_json(x, now) for x in readings[:MAX_WINDOWS]) if r is not None]
        if checked and now - max(r.read_at for r in checked) <= KEEP_FOR:
            rows[(pool, rid)] = RowReadings(fp, {r.window: r for r in checked})
    return rows


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _short_text(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 200 and v.isprintable()

