"""The daemon's deliveries: one queue per target, worked concurrently with a bound.

Each target has its own queue and worker task on the daemon's loop, so a target's alerts go
out in the order they were made (a recovery never overtakes its alert), while a dead target
(retrying, or waiting out its timeout) delays no other. At most ``parallel`` deliveries run at
once across targets (an :class:`asyncio.Semaphore`, each on a thread of the dispatcher's own
pool of that size, Apprise being blocking: the loop's default pool is smaller on a small
machine, and shared). :meth:`Dispatcher.drain` waits for the queues with a bound and gives back what is
still owed, the delivery under way included, which the daemon keeps in its status file
(:mod:`store.monitor.pending`) for the next run to send.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from store.monitor.alerts import Notification
from store.monitor.delivery import PARALLEL, Deliverer, Delivery, Target


class Dispatcher:
    """Per-target queues of notifications; :meth:`start` on the loop, :meth:`drain` to stop."""

    def __init__(self, deliverer: Deliverer, targets: Sequence[Target], done: Callable[[Delivery], None],
                 log: Callable[[str], None], parallel: int = PARALLEL) -> None:
        self.deliverer = deliverer
        self.targets = list(targets)
        self.done = done
        self.log = log
        self.parallel = max(1, parallel)
        self._queues: list[asyncio.Queue[Notification]] = []
        self._inflight: list[Notification | None] = [None] * len(self.targets)
        self._tasks: list[asyncio.Task[None]] = []
        self._sem: asyncio.Semaphore | None = None
        self._pool: ThreadPoolExecutor | None = None

    def start(self) -> None:
        """Start one worker per target (on the running loop)."""
        self._sem = asyncio.Semaphore(self.parallel)
        self._pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="monitor-deliver")
        self._queues = [asyncio.Queue() for _ in self.targets]
        self._tasks = [asyncio.create_task(self._work(i), name=f"monitor-deliver-{i}")
                       for i in range(len(self.targets))]

    def put(self, n: Notification) -> None:
        """Owe *n* to every target."""
        for q in self._queues:
            q.put_nowait(n)

    def put_for(self, n: Notification, shown: str) -> bool:
        """Owe *n* to the target shown as *shown* (False: no such target here)."""
        for t, q in zip(self.targets, self._queues, strict=True):
            if t.shown == shown:
                q.put_nowait(n)
                return True
        return False

    def idle(self) -> bool:
        """Nothing queued and nothing under way."""
        return all(q.empty() for q in self._queues) and all(n is None for n in self._inflight)

    def queued(self) -> int:
        return sum(q.qsize() for q in self._queues) + sum(n is not None for n in self._inflight)

    async def _work(self, i: int) -> None:
        q, t = self._queues[i], self.targets[i]
        assert self._sem is not None and self._pool is not None
        while True:
            n = await q.get()
            self._inflight[i] = n
            try:
                async with self._sem:
                    d: Delivery | None = await asyncio.get_running_loop().run_in_executor(
                        self._pool, self.deliverer.deliver_one, n, t)
            except asyncio.CancelledError:
                raise               # still owed: drain() reports it
            except Exception as exc:  # a delivery bug must not end the monitor
                self.log(f"delivery: {type(exc).__name__}")
                d = None
            self._inflight[i] = None
            if d is not None:
                self.done(d)
            q.task_done()

    async def drain(self, timeout: float) -> list[tuple[Notification, str]]:
        """Wait up to *timeout* s for every queue to empty, stop the workers, and give back what
        is still owed as (notification, target shown), oldest first per target."""
        if not self.idle() and timeout > 0:
            try:
                await asyncio.wait_for(asyncio.gather(*(q.join() for q in self._queues)), timeout)
            except TimeoutError:
                pass
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)   # one under way ends at the stop flag
        owed: list[tuple[Notification, str]] = []
        for t, q, n in zip(self.targets, self._queues, self._inflight, strict=True):
            if n is not None:
                owed.append((n, t.shown))
            while not q.empty():
                owed.append((q.get_nowait(), t.shown))
        owed.sort(key=lambda e: e[0].at)
        return owed
