"""What each answer the proxy relays cost its key (#29): the proxy's one
:class:`~store.usage.feed.UsageFeed`, with its two own listeners (the ledger, when
``usage.ledger`` is on, and the Prometheus counters of :mod:`store.proxy.observing.metrics`).

:meth:`Spend.answer` is called on the event loop for every answer relayed: a body read
whole from its verdict's usage (:meth:`store.proxy.forward.Forwarder._served`), a stream at
its end from its reader's (:mod:`store.proxy.edge.relay`), ``partial`` when it was cut short.
It only queues, stamped with the answer's time: the queue goes to the feed at most
:data:`BATCH` seconds later, in one hand-over (one wake of the feed's thread for the answers
of that time, not one per answer: a thread woken per request cost the loop more than the
feed's work), and pricing and the ledger's writes run on their own threads.
:meth:`Spend.wait_idle` is the readiness wait for a reader (a test) of what was fed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from store.dialects.anthropic import uses_oauth
from store.dialects.readings import Usage
from store.model import AUTH_OAUTH
from store.paths import Home
from store.proxy.observing.metrics import UsageCounters
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.upstreams import route_name
from store.usage.cost import Pricer
from store.usage.feed import UsageFeed
from store.usage.ledger import Ledger, ledger_path

log = logging.getLogger("hermes_admin.proxy")
BATCH = 0.02     # seconds an answer waits in the proxy's queue before the hand-over to the feed


class ChainFacts(Protocol):
    """What the feed needs of the chain (:class:`store.proxy.routing.chain.Chain`): its
    settings (through its headroom gate), clock and home, and a row's auth type."""

    headroom: Any
    clock: Callable[[], float]
    home: Home

    def auth_type(self, sel: Any) -> str | None: ...


class Spend:
    """The proxy's usage feed and its own listeners (one per proxy)."""

    def __init__(self, chain: ChainFacts, *, ledger: bool | None = None) -> None:
        self.chain = chain
        usage = chain.headroom.settings.usage
        self.feed = UsageFeed(Pricer(usage.prices), clock=chain.clock, notice=log.warning)
        self.counters = UsageCounters()
        self.ledger: Ledger | None = None
        if usage.ledger if ledger is None else ledger:
            self.ledger = Ledger(ledger_path(chain.home.root), keep_requests=usage.keep_requests,
                                 keep_hourly=usage.keep_hourly, notice=log.warning, clock=chain.clock)
            self.feed.listen(self.ledger)
        self.feed.listen(self.counters)
        self._rows: dict[tuple[str, str, str], tuple[bool, str | None]] = {}   # (pool, row, token) ->
        # (a subscription login, the secret's fingerprint): once per row and secret, not per request
        self._queue: collections.deque[tuple[Attempt, Usage | None, bool, float]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None

    def listen(self, listener: Any) -> None:
        """Another listener of every answer's :class:`~store.usage.record.Spent`."""
        self.feed.listen(listener)

    def answer(self, attempt: Attempt, usage: Usage | None, *, partial: bool = False) -> None:
        """One relayed answer of *attempt*'s row, which reported *usage*: queued, handed to
        the feed within :data:`BATCH` seconds (at once when no event loop runs here)."""
        self._queue.append((attempt, usage, partial, self.chain.clock()))
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.hand_over()
                return
            self._timer = loop.call_later(BATCH, self.hand_over)

    def hand_over(self) -> None:
        """Every queued answer to the feed, in order (on the loop; or at close)."""
        self._timer = None
        queue = self._queue
        while queue:
            try:
                attempt, usage, partial, at = queue.popleft()
            except IndexError:       # emptied by a close on another thread meanwhile
                break
            self._feed(attempt, usage, partial, at)

    def _feed(self, attempt: Attempt, usage: Usage | None, partial: bool, at: float) -> None:
        sel = attempt.selection
        want = attempt.want
        key = (sel.pool, sel.row_id, sel.token)
        row = self._rows.get(key)
        if row is None:
            auth_type = self.chain.auth_type(sel)
            row = (auth_type == AUTH_OAUTH or uses_oauth(sel.pool, auth_type, sel.token), sel.fingerprint)
            if len(self._rows) >= 8192:
                self._rows.clear()
            self._rows[key] = row
        route = attempt.route.name if attempt.route is not None else None
        self.feed.answer(sel.pool, sel.row_id, row[1], usage,
                         model=sel.model or (want.model if want is not None else None),
                         endpoint=(want.endpoint or want.protocol) if want is not None else None,
                         route=route_name(route) if route is not None else None, oauth=row[0], partial=partial,
                         at=at)

    def wait_idle(self, timeout: float) -> bool:
        """Whether every answer queued so far reached the feed's listeners within *timeout*
        seconds (bounded polling: the hand-over runs on the proxy's loop)."""
        deadline = time.monotonic() + timeout
        while self._queue:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return self.feed.wait_idle(max(0.0, deadline - time.monotonic()))

    def snapshot(self) -> dict[str, Any]:
        """The status document's ``usage_totals`` (the counters' figures)."""
        return self.counters.snapshot()

    def close(self, timeout: float = 5.0) -> None:
        """Hand on and write what is queued (bounded), then stop the threads."""
        self.hand_over()        # what the loop's timer has not handed over yet (a deque: thread-safe)
        self.feed.close(timeout)
        if self.ledger is not None:
            self.ledger.close(timeout)
