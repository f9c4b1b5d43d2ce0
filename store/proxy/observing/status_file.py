"""How the proxy's periodic task writes its status file (:mod:`store.proxy.observing.stats`):
on one thread kept for the task, and only when the document says something new.

Apart from :mod:`~store.proxy.observing.stats` because the CLI's verbs read status files
through that one and load no event loop or thread machinery at start-up.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

from store.paths import Home
from store.proxy.observing import stats
from store.proxy.observing.stats import HEARTBEAT

_MISSING = object()


class StatusFile:
    """How the proxy's periodic task writes its status file (event loop side; :meth:`close`
    when the task ends).

    On one thread of its own, started with the first write: handing it a document costs a
    fraction of starting a thread for each write (``run_blocking``: some 200 µs of CPU each
    here, as much as encoding the document). A daemon: it never holds the process.

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
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future[None], dict[str, Any]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def due(self, status: dict[str, Any]) -> bool:
        """True when *status* must be written: it says something the file does not."""
        at, said = status.get("updated_at"), self._said
        if said is None or self._at is None or not isinstance(at, (int, float)) or status.get("upstreams"):
            return True
        if not 0 <= at - self._at < self.heartbeat or len(said) != len(status) - 1:
            return True
        return any(k != "updated_at" and said.get(k, _MISSING) != v for k, v in status.items())

    def write(self, status: dict[str, Any]) -> asyncio.Future[None]:
        """:func:`~store.proxy.observing.stats.write_status` of *status* on the writer's thread when :meth:`due` (else a
        future already done); the future says how it went."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        if not self.due(status):
            fut.set_result(None)
            return fut
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(loop,), name="proxy-status", daemon=True)
            self._thread.start()
        self._jobs.put((fut, status))
        return fut

    def close(self) -> None:
        """The thread ends once the writes handed to it are done."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _written(self, fut: asyncio.Future[None], status: dict[str, Any], error: BaseException | None) -> None:
        if error is None:         # what the file says now (on the loop, before the task hears of it)
            at = status.get("updated_at")
            self._at = at if isinstance(at, (int, float)) else None
            self._said = {k: v for k, v in status.items() if k != "updated_at"}
        if fut.done():
            return
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while (job := self._jobs.get()) is not None:
            fut, status = job
            try:
                stats.write_status(self.home, status)
                error: BaseException | None = None
            except BaseException as exc:     # handed to the awaiting task, never lost
                error = exc
            try:
                loop.call_soon_threadsafe(self._written, fut, status, error)
            except RuntimeError:
                pass                         # the loop is gone: the proxy stopped without it
