"""Hold (#30, ``proxy.hold``): when no key of any route can serve and the soonest reset is
near, a request waits for that key instead of a 503.

``hold.max_wait`` (default 0: off) bounds the wait: a request is held only when the
soonest moment a key reopens (a bench's end, a model bench's, a headroom reset, a breaker
trying its upstream again: the eligibility refusals' ``until``) is within it, and never
past it. It wakes at that moment, or earlier when the store, the environment or the
configuration changes (:meth:`Hold.poke`, from the proxy's watcher: an operator's reset
lands in auth.json), and looks again (:meth:`~store.proxy.routing.chain.Chain.look_again`,
every route in chain order, the request's earlier failures forgotten: their benches have
ended). At most ``hold.max_waiting`` requests wait at once; past that, the 503 as before.
A client that leaves has its handler cancelled, and its wait and its place in the count
end with it. :attr:`Hold.waiting` is in the status file (``holding``).

The trade-off: a held client sees latency instead of an error it could act on; with hold
off (the default) a client gets the 503 and its ``Retry-After`` at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from store.config.proxy_settings import ProxySettings
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.protocols import Want

log = logging.getLogger("hermes_admin.proxy")

SLACK = 0.02       # wake this long after the reset (a bench ends *at* its time)
TICK = 1.0         # look again at least this often (a clock step, a reading gone stale)


class Hold:
    """The requests waiting for a key, on the proxy's event loop."""

    def __init__(self, clock: Callable[[], float], look: Callable[[Want], Attempt | None],
                 soonest: Callable[[Want], float | None], settings: Callable[[], ProxySettings]) -> None:
        self.clock = clock
        self.look = look            # a usable key now, any route (None: none)
        self.soonest = soonest      # when the soonest key reopens for a request (None: never by itself)
        self.settings = settings
        self.waiting = 0
        self._changed = asyncio.Event()

    def poke(self) -> None:
        """Something changed (the store, the environment, the configuration): every waiting
        request looks again now. Call on the event loop."""
        self._changed.set()
        self._changed = asyncio.Event()

    def may_hold(self, want: Want) -> float | None:
        """The deadline of a hold for *want* now (None: no hold: off, full, or nothing
        reopens within ``max_wait``)."""
        s = self.settings()
        if s.hold_max_wait <= 0 or self.waiting >= s.hold_max_waiting:
            return None
        now = self.clock()
        soon = self.soonest(want)
        if soon is None or soon - now > s.hold_max_wait:
            return None
        return now + s.hold_max_wait

    async def wait(self, want: Want, rid: str) -> Attempt | None:
        """Hold the request until a key can serve it (its attempt), or None: no hold, or
        the deadline passed with nothing usable."""
        deadline = self.may_hold(want)
        if deadline is None:
            return None
        self.waiting += 1
        log.info("request %s: no usable key; held for the soonest reset (at most %g s)", rid,
                 deadline - self.clock())
        try:
            while True:
                if (attempt := self.look(want)) is not None:
                    return attempt
                now = self.clock()
                soon = self.soonest(want)
                if now >= deadline or soon is None or soon > deadline:
                    return None
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), min(max(soon - now, 0.0) + SLACK, TICK,
                                                               deadline - now + SLACK))
                except TimeoutError:
                    pass
        finally:
            self.waiting -= 1
