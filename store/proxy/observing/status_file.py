"""How the proxy's periodic task writes its status file (:mod:`store.proxy.observing.stats`):
on one thread kept for the task (its other blocking calls run there too), and only when the
document says something new.

Apart from :mod:`~store.proxy.observing.stats` because the CLI's verbs read status files
through that one and load no event loop or thread machinery at start-up.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from store.paths import Home
from store.proxy.observing import stats
from store.proxy.observing.stats import HEARTBEAT

_MISSING = object()
T = TypeVar("T")


Job = tuple[asyncio.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any] | None]   # future, call, document


class StatusFile:
    """How the proxy's periodic task writes its status file (event loop side; :meth:`close`
    when the task ends).

    On one thread of its own, started with the first job, which runs the task's other
    blocking calls too (:meth:`run`: the write-behind of the request counts), one after the
    other as the task awaits them: handing it a job costs a fraction of starting a thread for
    each (``run_blocking``: some 200 µs of CPU a time here, as much as encoding the
    document). A daemon: it never holds the process.

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
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
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
        """Write *status* (:func:`~store.proxy.observing.stats.write_status`) on the thread
        when :meth:`due`, else a future already done; the future says how it went."""
        if self.due(status):
            return self._put(stats.write_status, (self.home, status), status)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """*fn(*args)* on the thread, after the jobs handed to it before; its exception is the future's."""
        return self._put(fn, args, None)

    def close(self) -> None:
        """The thread ends once the jobs handed to it are done."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _put(self, fn: Callable[..., Any], args: tuple[Any, ...], status: dict[str, Any] | None) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, args=(loop,), name="proxy-tick", daemon=True)
            self._thread.start()
        self._jobs.put((fut, fn, args, status))
        return fut

    def _done(self, fut: asyncio.Future[Any], value: Any, error: BaseException | None,
              status: dict[str, Any] | None) -> None:
        if status is not None and error is None:     # what the file says now (before the task hears)
            at = status.get("updated_at")
            self._at = at if isinstance(at, (int, float)) else None
            self._said = {k: v for k, v in status.items() if k != "updated_at"}
        if fut.done():
            return
        if error is None:
            fut.set_result(value)
        else:
            fut.set_exception(error)

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while (job := self._jobs.get()) is not None:
            fut, fn, args, status = job
            try:
                value, error = fn(*args), None
            except BaseException as exc:     # handed to the awaiting task, never lost
                value, error = None, exc
            try:
                loop.call_soon_threadsafe(self._done, fut, value, error, status)
            except RuntimeError:
                pass                         # the loop is gone: the proxy stopped without it
