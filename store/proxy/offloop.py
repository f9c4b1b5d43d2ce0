"""Blocking work off the event loop, in threads that never hold the process open.

The proxy's blocking calls (an outcome under the store lock, a token refresh, the restore
gate's probes, the write-behind flush, the status file) take at most their own timeouts,
but those are long (a lock wait is 30 s, a refresh 25 s). ``asyncio.to_thread`` runs them
in the loop's default executor, whose threads the interpreter joins at exit: one stuck
call would hold a SIGTERM past ``--drain-timeout``. Here each call gets a daemon thread,
so a bounded shutdown stays bounded; what such a thread was doing is safe to abandon (the
store's writes are atomic, and a killed writer leaves nothing behind: RELIABILITY 4, 24).
These calls are rare (failures, once a second), so a thread each costs nothing that shows.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _settle(fut: asyncio.Future, ok: bool, value: Any) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)


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

    threading.Thread(target=run, name=name, daemon=True).start()
    return await fut
