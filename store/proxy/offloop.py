"""Blocking work off the event loop, in threads that never hold the process open.

The proxy's blocking calls (an outcome under the store lock, a token refresh, the restore
gate's probes, the write-behind flush, the status file) take at most their own timeouts,
but those are long (a lock wait is 30 s, a refresh 25 s). ``asyncio.to_thread`` runs them
in the loop's default executor, whose threads the interpreter joins at exit: one stuck
call would hold a SIGTERM past ``--drain-timeout``. Here each call runs in a daemon
thread, so a bounded shutdown stays bounded; what such a thread was doing is safe to
abandon (the store's writes are atomic, and a killed writer leaves nothing behind:
RELIABILITY 4, 24).

A thread that finished its call waits :data:`IDLE_EXIT` seconds for the next one before it
ends: the calls of every second (the counts, the status file) reuse it instead of starting
a thread each, whose start the loop waits for (``Thread.start`` returns once the new thread
runs, on a busy machine after others had the CPU). A call never waits for another: when no
thread is free, it gets a new one.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
IDLE_EXIT = 30.0      # seconds a free thread waits for another call before it ends


def _settle(fut: asyncio.Future, ok: bool, value: Any) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


class Workers:
    """Daemon threads for blocking calls: a free one takes the next call, else a new one starts."""

    def __init__(self, idle_exit: float = IDLE_EXIT) -> None:
        self.idle_exit = idle_exit
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.free = 0          # threads waiting for a call (each call queued while free claims one)
        self.started = 0       # threads started, ever

    def submit(self, call: Callable[[], None], name: str) -> None:
        """Run *call* in a free thread, or a new one named *name*."""
        with self._lock:
            if self.free > 0:
                self.free -= 1          # claimed: the call is in the queue before any free thread may end
                self._calls.put(call)
                return
            self.started += 1
        threading.Thread(target=self._run, args=(call,), name=name, daemon=True).start()

    def _run(self, call: Callable[[], None]) -> None:
        while True:
            call()
            with self._lock:
                self.free += 1
            while True:
                try:
                    call = self._calls.get(timeout=self.idle_exit)
                    break
                except queue.Empty:
                    with self._lock:     # a call queued since the wait ended is still taken
                        if self._calls.empty():
                            self.free -= 1
                            return


WORKERS = Workers()


async def run_blocking(fn: Callable[..., T], *args: Any, name: str = "proxy-io") -> T:
    """``await`` *fn(*args)* run in a daemon thread; its exception is raised here."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            value, ok = fn(*args), True
        except BaseException as exc:   # handed to the awaiting task, never lost
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(_settle, fut, ok, value)
        except RuntimeError:
            pass                       # the loop is gone: the proxy stopped without it

    WORKERS.submit(run, name)
    return await fut
