"""What each answer the proxy relays cost its key (#29): the proxy's one
:class:`~store.usage.feed.UsageFeed`, with its two own listeners (the ledger, when
``usage.ledger`` is on, and the Prometheus counters of :mod:`store.proxy.observing.metrics`).

:meth:`Spend.answer` is called on the event loop for every answer relayed: a body read
whole from its verdict's usage (:meth:`store.proxy.forward.Forwarder._served`), a stream at
its end from its reader's (:mod:`store.proxy.edge.relay`), ``partial`` when it was cut short.
It only queues: pricing and the ledger's writes run on their own threads.
"""

from __future__ import annotations

import logging
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
        self._oauth: dict[tuple[str, str, str], bool] = {}    # (pool, row, token) -> a subscription login

    def listen(self, listener: Any) -> None:
        """Another listener of every answer's :class:`~store.usage.record.Spent`."""
        self.feed.listen(listener)

    def answer(self, attempt: Attempt, usage: Usage | None, *, partial: bool = False) -> None:
        """One relayed answer of *attempt*'s row, which reported *usage*."""
        sel = attempt.selection
        want = attempt.want
        key = (sel.pool, sel.row_id, sel.token)
        oauth = self._oauth.get(key)
        if oauth is None:          # once per row and secret: the row's lookup is not per request
            auth_type = self.chain.auth_type(sel)
            oauth = auth_type == AUTH_OAUTH or uses_oauth(sel.pool, auth_type, sel.token)
            if len(self._oauth) >= 8192:
                self._oauth.clear()
            self._oauth[key] = oauth
        route = attempt.route.name if attempt.route is not None else None
        self.feed.answer(sel.pool, sel.row_id, sel.fingerprint, usage,
                         model=sel.model or (want.model if want is not None else None),
                         endpoint=(want.endpoint or want.protocol) if want is not None else None,
                         route=route_name(route) if route is not None else None, oauth=oauth, partial=partial)

    def snapshot(self) -> dict[str, Any]:
        """The status document's ``usage_totals`` (the counters' figures)."""
        return self.counters.snapshot()

    def close(self, timeout: float = 5.0) -> None:
        """Hand on and write what is queued (bounded), then stop the threads."""
        self.feed.close(timeout)
        if self.ledger is not None:
            self.ledger.close(timeout)
