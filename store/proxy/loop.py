"""The event loop the proxy runs on: uvloop where it is installed, else asyncio's own.

uvloop (libuv under asyncio's API; aiohttp runs on it unchanged) is the default because it
is measurably faster here (``bench/bench_proxy.py`` measures both in one run, and
docs/benchmarks.md has the figures). Where it cannot be installed (Windows, PyPy, a
platform without a wheel) the proxy runs on asyncio's loop, the same code.
``HERMES_ADMIN_PROXY_LOOP=asyncio`` picks asyncio's loop anyway (to compare, or to rule
uvloop out); ``=uvloop`` insists on uvloop and fails when it is missing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
ENV = "HERMES_ADMIN_PROXY_LOOP"


def _uvloop() -> Any:
    choice = os.environ.get(ENV, "").strip().lower()
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise
        return None
    return uvloop


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: what :func:`run` uses (or the running loop, if any)."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return "uvloop" if _uvloop() is not None else "asyncio"
    return "uvloop" if type(running).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen loop."""
    try:
        uv = _uvloop()
    except ImportError:
        main.close()                  # never started: no "was never awaited" on the way out
        raise
    if uv is None:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uv.new_event_loop) as runner:
        return runner.run(main)
