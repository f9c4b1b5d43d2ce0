"""How the proxy's periodic task writes its status file (:mod:`store.proxy.observing.stats`):
only when the document says something new, off the loop on the proxy's blocking-call
threads (:mod:`store.proxy.offloop`, reused while free).

Apart from :mod:`~store.proxy.observing.stats` because the CLI's verbs read status files
through that one and load no event loop or thread machinery at start-up.
"""

from __future__ import annotations

from typing import Any

from store.paths import Home
from store.proxy.observing import stats
from store.proxy.observing.stats import HEARTBEAT
from store.proxy.offloop import run_blocking

_MISSING = object()


class StatusFile:
    """How the proxy's periodic task writes its status file (event loop side).

    Only when due: an idle proxy's document says the same thing second after second, only
    ``updated_at`` moves. It is written when anything else changed, when it shows an
    upstream's circuit breaker (readers count the time to its retry from ``updated_at``), and
    at least every :data:`~store.proxy.observing.stats.HEARTBEAT` seconds of ``updated_at``
    otherwise, so :func:`~store.proxy.observing.stats.is_live` (``STALE_AFTER``) still sees
    the proxy alive. The comparison is C dict equality (microseconds; building the document
    costs far more), so each document must be built afresh: no container shared with the
    proxy's state, which would change under the copy kept here."""

    def __init__(self, home: Home, heartbeat: float = HEARTBEAT) -> None:
        self.home = home
        self.heartbeat = heartbeat
        self._said: dict[str, Any] | None = None     # the last document written, but its updated_at
        self._at: float | None = None

    def due(self, status: dict[str, Any]) -> bool:
        """True when *status* must be written: it says something the file does not."""
        at, said = status.get("updated_at"), self._said
        if said is None or self._at is None or not isinstance(at, (int, float)) or status.get("upstreams"):
            return True
        if not 0 <= at - self._at < self.heartbeat or len(said) != len(status) - 1:
            return True
        return any(k != "updated_at" and said.get(k, _MISSING) != v for k, v in status.items())

    async def write(self, status: dict[str, Any]) -> None:
        """Write *status* (:func:`~store.proxy.observing.stats.write_status`) off the loop
        when :meth:`due`; its error is raised here, and the file is then not taken as saying it."""
        if not self.due(status):
            return
        await run_blocking(stats.write_status, self.home, status)
        self.written(status)

    def written(self, status: dict[str, Any]) -> None:
        """*status* is what the file says now."""
        at = status.get("updated_at")
        self._at = at if isinstance(at, (int, float)) else None
        self._said = {k: v for k, v in status.items() if k != "updated_at"}
