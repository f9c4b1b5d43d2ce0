"""The event loop the proxy runs on: asyncio's own by default, uvloop when asked for.

uvloop (libuv under asyncio's API; aiohttp runs on it unchanged) was measured beside
asyncio's loop in ``bench/bench_proxy.py`` (both in one run, each against the bare aiohttp
passthrough on the same loop): on this 2-core machine it was not faster for the proxy. In
three runs its added p50 was better in one and worse in two at one concurrent request,
better or the same at 16 (all within the machine's noise), and its throughput at 64
concurrent was lower in all three (7%, 17%, 28%), so it is not the default. ``HERMES_ADMIN_PROXY_LOOP=uvloop`` runs
the proxy on it where it is installed (``pip install 'hermes-admin[uvloop]'``), to measure
on another machine; where it cannot be imported (Windows, PyPy, no wheel) the proxy says so
on its log and runs on asyncio's loop, the same code. ``=asyncio`` (or unset) is the default.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
ENV = "HERMES_ADMIN_PROXY_LOOP"
GC_YOUNG = 10_000         # the cyclic GC's young-generation threshold while serving (Python's: 700)
log = logging.getLogger("hermes_admin.proxy")


def _uvloop(warn: bool = False) -> Any:
    """The uvloop module when it is asked for and importable, else None."""
    if os.environ.get(ENV, "").strip().lower() != "uvloop":
        return None
    try:
        import uvloop  # an optional extra, only when asked for (tests/project/test_layers.py)
    except ImportError:
        if warn:
            log.warning("%s=uvloop, but uvloop cannot be imported here; running on asyncio's loop", ENV)
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
    uv = _uvloop(warn=True)
    if uv is None:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uv.new_event_loop) as runner:
        return runner.run(main)


def settle_gc() -> None:
    """The cyclic GC for a proxy that has started. What start-up made lives as long as the
    process: kept out of the full collections, which otherwise walk it all and stalled every
    in-flight request for ~17 ms every few seconds under load. A request's objects mostly die
    young by their counts; what sets off a young collection is the objects alive across the
    16 or so requests in flight, each such collection some 0.3 ms: with Python's threshold
    that was 9 us a request at c16, with :data:`GC_YOUNG` none in 3,000 requests
    (``bench/bench_proxy_gc.py``)."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
