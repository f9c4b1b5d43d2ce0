"""The usage feed (#29): one per proxy. Each answer's usage (from its verdict, or a
stream's reader) and its row become one :class:`~store.usage.record.Spent`, handed to
every listener: the ledger (:class:`store.usage.ledger.Ledger`), the Prometheus counters,
and whatever others attach with :meth:`UsageFeed.listen` (the budgets' tally, the fleet's
counters).

:meth:`UsageFeed.answer` only queues (the proxy's event loop never waits on it); a thread
prices each answer (:class:`store.usage.cost.Pricer`: a price-table lookup is too slow for
the loop) and calls the listeners in order. A listener that raises is told once in the log
and never stops the others or the proxy.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from store.dialects.readings import Usage
from store.usage.cost import Pricer
from store.usage.record import Spent

log = logging.getLogger("hermes_admin.usage")

Listener = Callable[[Spent], object]
QUEUE_CAP = 100_000
WAIT = 0.25
_NOTHING = Usage()       # an answer that said nothing (frozen: one serves them all)


class UsageFeed:
    """Answers in, :class:`Spent` out to every listener, on the feed's own thread."""

    def __init__(self, pricer: Pricer | None = None, *, clock: Callable[[], float] = time.time,
                 notice: Callable[[str], object] = log.warning) -> None:
        self.pricer = pricer or Pricer()
        self.clock = clock
        self.notice = notice
        self.listeners: list[Listener] = []
        self.fed = 0               # answers handed to the listeners
        self.dropped = 0           # answers dropped past QUEUE_CAP
        self._queue: collections.deque[tuple] = collections.deque()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stop = False
        self._failing: set[int] = set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def listen(self, listener: Listener) -> None:
        """Hand every later :class:`Spent` to *listener* (called on the feed's thread)."""
        self.listeners.append(listener)

    def answer(self, pool: str, row_id: str | None, fingerprint: str | None, usage: Usage | None, *,
               model: str | None = None, endpoint: str | None = None, route: str | None = None,
               oauth: bool = False, partial: bool = False, at: float | None = None) -> None:
        """One answer of *pool*'s row *row_id* that reported *usage* (None: it said nothing).
        Never blocks and never raises."""
        if len(self._queue) >= QUEUE_CAP:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append((self.clock() if at is None else at, pool, row_id, fingerprint, usage, model, endpoint,
                            route, oauth, partial))
        # After the append, as before; each Event's lock only when its state changes: a batch
        # of answers (the proxy hands them on 20 ms at a time) takes each lock once, not per answer.
        if self._idle.is_set():
            self._idle.clear()
        if self._thread is None:
            self._start()
        if not self._wake.is_set():
            self._wake.set()

    def spent(self, item: tuple) -> Spent:
        """The :class:`Spent` of one queued answer: its usage, priced."""
        at, pool, row_id, fp, usage, model, endpoint, route, oauth, partial = item
        c = self.pricer.cost(pool, model, usage, oauth=oauth)
        u = usage or _NOTHING
        return Spent(at, pool, row_id, fp, model, endpoint, route, u.input_tokens, u.output_tokens,
                     u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens, c.usd, c.status, c.version,
                     partial)

    def wait_idle(self, timeout: float) -> bool:
        """Whether every queued answer reached the listeners within *timeout* seconds."""
        deadline = time.monotonic() + timeout
        while True:
            if self._idle.is_set() and not self._queue:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._idle.wait(min(left, 0.05))

    def close(self, timeout: float = 5.0) -> None:
        """Hand on what is queued (bounded by *timeout*), then stop the thread."""
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="usage-feed", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        listeners: tuple[Listener, ...] = ()
        while True:
            self._wake.wait(WAIT)
            self._wake.clear()
            while self._queue:
                if len(listeners) != len(self.listeners):    # one listens: from its next answer on
                    listeners = tuple(self.listeners)
                try:
                    item = self._queue.popleft()
                except IndexError:
                    break
                try:
                    s = self.spent(item)
                except Exception as exc:       # a bug in pricing never stops the feed
                    self.notice(f"usage feed: an answer could not be priced ({type(exc).__name__}: {exc})")
                    continue
                self.fed += 1
                for fn in listeners:
                    try:
                        fn(s)
                    except Exception as exc:
                        if id(fn) not in self._failing:
                            self._failing.add(id(fn))
                            self.notice(f"usage feed: listener {getattr(fn, '__qualname__', fn)!s:.80} "
                                        f"failed ({type(exc).__name__}: {exc}); the others go on")
            if not self._queue:
                self._idle.set()
            if self._stop and not self._queue:
                break
