"""The proxy's headroom (#21): every answer's rate-limit readings recorded against the row
that served it, and the rows those readings hold back kept out of the picks.

:class:`HeadroomGate` owns the proxy's :class:`store.agent.headroom.Headroom` (written
behind by the proxy's every-second loop, merged with what every other process on the home
wrote; the watcher takes in the sidecar when another process replaces it). After each
answer it works out the row's :func:`store.agent.headroom.hold` once, so a pick only looks
up the few rows held now:

- a row its provider said has nothing left until T is not picked, nor sent a retry, until T;
- a row at or under the pool's threshold (``hermes-admin.yaml``, read at start) yields to
  any row above it, and still serves when none is.

- a row whose last count-carrying reading said *n* requests were left, with *n* requests to
  it still in flight, yields to rows with room (a soft hold, :class:`Ticket`): the answers on
  their way will say 0, and a request sent meanwhile would be the 429. It is still used when
  no row has room, and released as soon as one of those answers is in.

Held rows are not a fallback: they are skipped like a row on an open breaker, and a 503
counts their reset in ``Retry-After``. An operator's reset of a row, seen in the store
(:meth:`HeadroomGate.cleared`), lifts what readings taken before it held. Holds bind to the
secret's display fingerprint (a re-keyed row starts afresh). Pure and fast on the event loop
(a dict lookup per pick while nothing is held); only :meth:`flush` and :meth:`follow` do
file IO, off the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from store.agent.headroom import Headroom, Hold, held_back
from store.agent.outcomes import Selection
from store.config import settings as settings_file
from store.dialects.readings import Reading
from store.dialects.registry import read_headers
from store.errors import HermesAdminError
from store.model import Row, parse_epoch
from store.pools.view import row_fingerprint

_NONE: frozenset[str] = frozenset()


def carries_readings(headers: Iterable[str]) -> bool:
    """Whether any header name may hold a rate-limit reading (the cheap test first)."""
    return "ratelimit" in "\n".join(headers).lower()      # one pass in C, not one per name


class Ticket:
    """One request on its way to a row: counted in flight until its answer's headers are in
    (or it fails). Made by :meth:`HeadroomGate.sent`; closed once."""

    __slots__ = ("pool", "row_id", "open")

    def __init__(self, pool: str, row_id: str) -> None:
        self.pool, self.row_id, self.open = pool, row_id, True


def _budget(readings: Iterable[Reading], now: float) -> Reading | None:
    """The fresh window with the fewest requests left by count (what in-flight requests spend)."""
    counted = [r for r in readings if r.window == "requests" and r.remaining is not None
               and r.reset_at is not None and r.reset_at > now]
    return min(counted, key=lambda r: r.remaining or 0.0, default=None)


class HeadroomGate:
    """The proxy's readings per row, and the holds they put on picks."""

    def __init__(self, home: Any, clock: Callable[[], float], *, enabled: bool = True,
                 settings: settings_file.Settings | None = None, notice: Callable[[str], Any] | None = None) -> None:
        self.enabled = enabled
        self.clock = clock
        self.room = Headroom(home, clock)
        if settings is None:
            try:
                settings = settings_file.read(home)
            except HermesAdminError as exc:
                if notice is not None:
                    notice(f"{exc}; the default headroom settings apply")
                settings = settings_file.DEFAULTS
        self.settings = settings
        # pool -> row id -> (fingerprint the hold is bound to, hold); replaced, never
        # changed in place, so a pick reads it without a lock.
        self._holds: dict[str, dict[str, tuple[str | None, Hold]]] = {}
        self._lock = threading.Lock()
        # Requests in flight per (pool, row id); the last count of requests left per row
        # (fingerprint, reading); the rows those in flight have spent down, as soft holds.
        self._flying: dict[tuple[str, str], int] = {}
        self._budgets: dict[tuple[str, str], tuple[str | None, Reading]] = {}
        self._spent: dict[str, dict[str, tuple[str | None, Hold]]] = {}

    # -- answers in --

    def sent(self, sel: Selection) -> Ticket | None:
        """A request leaves for *sel*'s row (the event loop, right after its pick)."""
        if not self.enabled:
            return None
        key = (sel.pool, sel.row_id)
        self._flying[key] = self._flying.get(key, 0) + 1
        if key in self._budgets:
            self._spend(key, self.clock())
        return Ticket(sel.pool, sel.row_id)

    def done(self, ticket: Ticket | None) -> None:
        """The request of *ticket* is over (its answer's headers are in, or it failed)."""
        if ticket is None or not ticket.open:
            return
        ticket.open = False
        key = (ticket.pool, ticket.row_id)
        n = self._flying.get(key, 0) - 1
        if n > 0:
            self._flying[key] = n
        else:
            self._flying.pop(key, None)
        if key in self._budgets:
            self._spend(key, self.clock())

    def _spend(self, key: tuple[str, str], now: float) -> None:
        """Whether the requests in flight to the row have spent what its last reading left."""
        pool, rid = key
        got = self._budgets.get(key)      # an operator's reset may have dropped it (the watcher's thread)
        if got is None:
            return
        fp, r = got
        live = r.reset_at is not None and r.reset_at > now
        if not live:
            del self._budgets[key]           # a new window: the next answer says what is left
        spent = live and (r.remaining or 0.0) - self._flying.get(key, 0) <= 0
        with self._lock:
            held = self._spent.get(pool) or {}
            if spent == (rid in held):
                return
            fresh = dict(held)
            if spent:
                fresh[rid] = (fp, Hold(r.reset_at or now, False, r))
            else:
                del fresh[rid]
            self._spent[pool] = fresh

    def read(self, headers: Mapping[str, str], now: float) -> tuple[Reading, ...]:
        """An answer's readings, read once (nothing when headroom is off or no header may
        hold one: the cheap test first). The verdict and :meth:`observe` take these."""
        if not self.enabled or not carries_readings(headers):
            return ()
        return tuple(read_headers(headers, now))

    def observe(self, sel: Selection, readings: Sequence[Reading], ticket: Ticket | None = None) -> None:
        """Record an answer's *readings* (:meth:`read`) against *sel*'s row and judge its
        hold again (the answer of *ticket*: no longer in flight, its reading counts it)."""
        if not self.enabled:
            return
        if readings:
            now = self.clock()
            fp = sel.fingerprint
            key = (sel.pool, sel.row_id)
            self.room.record(sel.pool, sel.row_id, fp, list(readings))
            budget = _budget(readings, now)
            if budget is not None:
                self._budgets[key] = (fp, budget)
            self._judge(sel.pool, sel.row_id, fp, now)
        self.done(ticket)

    def _judge(self, pool: str, row_id: str, fp: str | None, now: float) -> None:
        h = self.room.hold(pool, row_id, fp, now, self.settings.threshold_for(pool))
        with self._lock:
            held = self._holds.get(pool) or {}
            if h is None and row_id not in held:
                return
            fresh = dict(held)
            if h is None:
                del fresh[row_id]
            else:
                fresh[row_id] = (fp, h)
            self._holds[pool] = fresh

    def cleared(self, rows_by_pool: Mapping[str, Iterable[Row]]) -> None:
        """The store as just read: a row an operator reset (``status_cleared_at`` newer than
        any reset seen) is held no more by readings taken before it, hard or soft, so the
        next request may go to it (the watcher's thread; picks read the holds without a lock)."""
        if not self.enabled:
            return
        now = self.clock()
        for pool, rows in rows_by_pool.items():
            for row in rows:
                at = parse_epoch(row.get("status_cleared_at"))
                rid = str(row.get("id"))
                if at is None or not self.room.cleared(pool, rid, at):
                    continue
                key = (pool, rid)
                budget = self._budgets.get(key)
                if budget is not None and budget[1].read_at <= at:
                    self._budgets.pop(key, None)
                with self._lock:
                    spent = self._spent.get(pool) or {}
                    if rid in spent and spent[rid][1].reading.read_at <= at:
                        self._spent[pool] = {k: v for k, v in spent.items() if k != rid}
                held = (self._holds.get(pool) or {}).get(rid)
                if held is not None:
                    self._judge(pool, rid, held[0], now)     # judged again on what was said since

    # -- what picks ask --

    def holding(self, pool: str) -> bool:
        """Anything held in *pool* (the cheap test a pick makes first)."""
        return bool(self._holds.get(pool)) or bool(self._spent.get(pool))

    def _bound(self, pool: str, rows: Iterable[Row], now: float, env: Mapping[str, str],
               spent: bool = False) -> dict[str, Hold]:
        held = self._holds.get(pool) or {}
        soft = self._spent.get(pool) if spent else None
        if not held and not soft:
            return {}
        out = {}
        for row in rows:
            rid = str(row.get("id"))
            got = held.get(rid) or (soft.get(rid) if soft else None)
            if got is not None and got[1].until > now and row_fingerprint(pool, row, env) == got[0]:
                out[rid] = got[1]
        return out

    def held(self, pool: str, rows: list[Row], now: float, env: Mapping[str, str]) -> frozenset[str] | set[str]:
        """The ids of *rows* (the ones a pick may use) it must leave out now."""
        if not self.holding(pool):
            return _NONE
        holds = self._bound(pool, rows, now, env, spent=True)
        return held_back(holds, [str(r.get("id")) for r in rows]) if holds else _NONE

    def exhausted_until(self, pool: str, row: Row, now: float, env: Mapping[str, str]) -> float | None:
        """When *row* may be sent to again, if its provider said nothing is left (else None)."""
        h = self._bound(pool, (row,), now, env).get(str(row.get("id")))
        return h.until if h is not None and h.exhausted else None

    def later(self, pool: str, row: Row, now: float, env: Mapping[str, str], other: float | None) -> float | None:
        """The later of *other* and when *row*'s provider said it has something left again."""
        if not self._holds.get(pool):
            return other
        held = self.exhausted_until(pool, row, now, env)
        return held if other is None or (held is not None and held > other) else other

    def weigh(self, pool: str, env: Mapping[str, str], now: float) -> Callable[[Row], float | None] | None:
        """``least_used``'s weight (the share left), when the option is on."""
        if not (self.enabled and self.settings.least_used_weighs_headroom):
            return None
        return lambda r: self.room.left(pool, str(r.get("id")), row_fingerprint(pool, r, env), now)

    # -- the every-second loop and the watcher (blocking: off the event loop) --

    def take_notices(self) -> list[str]:
        """What went wrong with the sidecar since last asked (for the proxy's log)."""
        notices = self.room.notices
        out, notices[:] = list(notices), []
        return out

    @property
    def pending(self) -> bool:
        return self.room.pending

    def flush(self, force: bool = False) -> bool:
        """Write the readings behind (at most once a second); drop holds that ran out."""
        now = self.clock()
        with self._lock:
            for holds in (self._holds, self._spent):
                for pool, held in list(holds.items()):
                    if any(h.until <= now for _fp, h in held.values()):
                        holds[pool] = {k: v for k, v in held.items() if v[1].until > now}
        return self.room.flush(force)

    def follow(self) -> bool:
        """Take in what another process on the home wrote, and judge every row again."""
        if not self.enabled or not self.room.follow():
            return False
        now = self.clock()
        for (pool, rid), fp in self.room.bound():
            self._judge(pool, rid, fp, now)
        return True
