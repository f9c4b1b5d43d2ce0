"""The fleet's usage counters (#29): every host's spend per key per day, added up in Redis,
so totals and budgets hold across hosts.

One hash per pool per UTC day, ``hermes-admin:fleet:usage:<pool>:<YYYY-MM-DD>``, one field
per row id holding the dollars of known cost every host has added (``HINCRBYFLOAT``); each
hash expires about 35 days after its last addition. Key names and fields carry pool names,
dates and row ids only: never a secret, never a fingerprint.

:class:`FleetUsage` is this host's side, over the proxy's
:class:`~store.usage.tally.Tally`: every few seconds (:meth:`FleetUsage.run`, in a thread of
its own, never on the event loop nor under any lock) it adds what the host owes
(:meth:`Tally.owed`: spent since its last successful addition) in one ``MULTI``, reads the
day's totals back and hands both to the tally (:meth:`Tally.settle`), whose budget checks
then count the fleet's total plus what this host spent since. A month budget counts the
fleet's month: on the same thread, every :data:`MONTH_EVERY` syncs (and at once when the day
turns or this host pays for an earlier day), the same pipeline reads this month's earlier
day hashes of each pool (at most 30) and hands their totals to :meth:`Tally.settle_month`;
a hash lives 35 days, so the 1st of a month is still there on the 31st. A host that cannot reach Redis
keeps counting locally (what it owes grows) and adds it all when Redis answers again: a
notice when it goes, another when it has caught up. What comes back from Redis is outside
data: a field that is no row id or a value that is no sane amount is dropped with a notice.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import redis

from store import outside
from store.fleet.client import DEFAULT_NAMESPACE
from store.usage.tally import MONTH, DayKey, Tally, day_of, starts

log = logging.getLogger("hermes_admin.fleet")

NAMESPACE = DEFAULT_NAMESPACE + "usage:"
TTL_S = 35 * 86400
INTERVAL_S = 2.0
MONTH_EVERY = 15                    # syncs between two reads of the month's earlier days (30 s)
MAX_USD = 1e9                       # a key's day past a billion dollars is no reading
_ROW_ID = re.compile(r"[A-Za-z0-9_.:@+-]{1,128}")


def day_text(day: int) -> str:
    """A tally day (days since the epoch) as ``YYYY-MM-DD`` (UTC)."""
    return time.strftime("%Y-%m-%d", time.gmtime(day * 86400))


def hash_key(pool: str, day: int, namespace: str = NAMESPACE) -> str:
    """The Redis hash of *pool*'s spend on *day*."""
    return f"{namespace}{pool}:{day_text(day)}"


class FleetUsage:
    """This host's additions to the fleet's usage counters, and the totals read back."""

    def __init__(self, client: redis.Redis, tally: Tally, pools: Callable[[], Iterable[str]], *,
                 namespace: str = NAMESPACE, ttl: int = TTL_S, notice: Callable[[str], Any] = log.warning,
                 month_every: int = MONTH_EVERY) -> None:
        self.client = client
        self.tally = tally
        self.pools = pools                  # the pools whose day totals are read back
        self.namespace = namespace
        self.ttl = ttl
        self.notice = notice
        self.down: str | None = None        # why the last sync failed (None: it did not)
        self.dropped = 0                    # values from Redis refused as outside data
        self.month_every = max(1, month_every)
        self._syncs = 0                     # syncs that reached Redis
        self._month_on: int | None = None   # the day the month's earlier days were last read on

    def _earlier_days(self, today: int, owed: Iterable[DayKey]) -> list[int] | None:
        """This month's days before *today* when they are due to be read again (None: not
        now): the first sync, a new day, every ``month_every`` syncs, or a payment for one of them."""
        if not (self._month_on != today or self._syncs % self.month_every == 0 or any(k[2] < today for k in owed)):
            return None
        return list(range(day_of(starts(MONTH, today * 86400.0)), today))

    def sync(self) -> bool:
        """Add what this host owes, read today's totals back (blocking: a few round trips at
        most, one ``MULTI``). False when Redis could not be reached: nothing is settled, what
        is owed stays owed."""
        owed = self.tally.owed()
        today = day_of(self.tally.clock())
        pools = sorted({*self.pools(), *(k[0] for k in owed)})
        try:
            pipe = self.client.pipeline(transaction=True)
            for (pool, row_id, day), usd in owed.items():
                key = hash_key(pool, day, self.namespace)
                pipe.hincrbyfloat(key, row_id, usd)
                pipe.expire(key, self.ttl)
            for pool in pools:
                pipe.hgetall(hash_key(pool, today, self.namespace))
            earlier = self._earlier_days(today, owed)
            for pool in pools:
                for day in earlier or ():
                    pipe.hgetall(hash_key(pool, day, self.namespace))
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            if self.down is None:
                self.notice(f"fleet usage: Redis cannot be reached ({type(exc).__name__}); spend is counted "
                            f"on this host and added when Redis answers again")
            self.down = type(exc).__name__
            return False
        # An error reply (a key of the wrong type) fails that command alone: what was added is
        # settled, what was refused stays owed, a total that cannot be read is dropped.
        paid = {k: usd for (k, usd), added in zip(owed.items(), replies[0:2 * len(owed):2], strict=True)
                if not isinstance(added, Exception)}
        if len(paid) < len(owed):
            self._drop(f"{len(owed) - len(paid)} addition(s) refused by Redis; kept to add again")
        at = 2 * len(owed) + len(pools)
        totals = [t for pool, got in zip(pools, replies[2 * len(owed):at], strict=True)
                  for t in self._totals(pool, today, got)]
        if earlier is not None:
            # Before settle: what was just paid for an earlier day is then counted twice for a
            # moment (in the month read back and still owed), never not at all.
            days = [(pool, day) for pool in pools for day in earlier]
            self.tally.settle_month((today - len(earlier), today), [
                t for (pool, day), got in zip(days, replies[at:], strict=True) for t in self._totals(pool, day, got)])
            self._month_on = today
        self._syncs += 1
        self.tally.settle(paid, totals)
        if self.down is not None:
            self.notice(f"fleet usage: Redis answers again; caught up (${sum(owed.values()):,.4f} added)")
            self.down = None
        return True

    def _totals(self, pool: str, day: int, got: Any) -> list[tuple[DayKey, float]]:
        """One hash read back, checked: (pool, row id, day) -> dollars."""
        if not isinstance(got, dict):
            self._drop(f"{hash_key(pool, day, self.namespace)} is not a hash")
            return []
        out = []
        for field, value in got.items():
            if not isinstance(field, str) or not _ROW_ID.fullmatch(field):
                self._drop(f"a field of {hash_key(pool, day, self.namespace)} is no row id")
                continue
            usd = outside.number(value, f"{pool}/{field}", lo=0.0, hi=MAX_USD, notice=self._drop)
            if usd is not None:
                out.append(((pool, field, day), usd))
        return out

    def _drop(self, text: str) -> None:
        self.dropped += 1
        if self.dropped <= 10:          # said, not repeated every few seconds for ever
            self.notice(f"fleet usage: dropped from Redis: {text}")

    def run(self, stop: threading.Event, interval: float = INTERVAL_S) -> None:
        """Sync every *interval* seconds until *stop* is set (then once more, to hand over
        what is owed). Meant for a thread of its own."""
        while not stop.wait(interval):
            self.sync()
        self.sync()

    def start(self, interval: float = INTERVAL_S) -> Callable[[], None]:
        """:meth:`run` in a daemon thread; returns the function that stops it (bounded)."""
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop, interval), name="fleet-usage", daemon=True)
        thread.start()

        def halt() -> None:
            stop.set()
            thread.join(10)
        return halt
