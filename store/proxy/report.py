"""What the chain looks like from outside: per route its rows by status for the status
file (and ``proxy status``), and when each pool can serve again for a 503.

Pure functions of :meth:`store.proxy.chain.Chain.states` and the clock. Route names may
hold a base URL (a custom fallback): they are shown without any user or password in it
(:func:`store.proxy.upstreams.route_name`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from store.pools import policy
from store.proxy.chain import Chain
from store.proxy.protocols import OPENAI, Want, served_paths
from store.proxy.upstreams import route_name


def describe(chain: Chain) -> list[dict[str, Any]]:
    """The chain for the status file: per route its pool, model, the paths it serves and
    row counts (``down``: usable rows whose upstream's breaker is open, not counted as
    usable; ``model_benched``: rows benched for one model or more, still serving others)."""
    active = chain.runtime.active
    return [{"name": route_name(route.name), "pool": route.pool, "model": route.model if i else None,
             "active": i == active, "paths": served_paths(chain.protocols(i)), "rows": len(states),
             "model_benched": sum(1 for e, _d in states if e.usable and e.model_benches),
             "usable": sum(1 for e, down in states if e.usable and down is None),
             "down": sum(1 for _e, down in states if down is not None),
             "cooling": sum(1 for e, _d in states if e.status == policy.COOLING),
             "dead": sum(1 for e, _d in states if e.status == policy.DEAD)}
            for i, route, states in chain.states()]


def reopen_times(chain: Chain, want: Want | None = None) -> dict[str, float | None]:
    """Per pool of the chain (of the routes that speak *want*'s protocol): when its soonest
    cooling row reopens, its failing upstream is tried again, or a bench for the model asked
    for ends (None: never by itself)."""
    protocol = want.protocol if want is not None else OPENAI
    out: dict[str, float | None] = {}
    for i, route, states in chain.states():
        key = route_name(route.pool or route.name)
        if key in out or not chain.speaks(i, protocol):
            continue
        model = (route.model if i else None) or (want.model if want is not None else None)
        times = [t for e, down in states
                 for t in ((e.available_at if e.status == policy.COOLING else None), down,
                           e.model_benches.get(model) if model and e.usable else None) if t is not None]
        out[key] = min(times) if times else None
    return out


def retry_after(reopen: Mapping[str, float | None], now: float) -> int | None:
    """Whole seconds until the soonest of *reopen* (at least 1), None when nothing reopens."""
    soonest = [t for t in reopen.values() if t is not None and math.isfinite(t)]
    if not soonest:
        return None
    return max(1, math.ceil(min(soonest) - now))
