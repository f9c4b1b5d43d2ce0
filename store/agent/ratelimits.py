"""Rate-limit readings: what the console and the selection ask of them.

The readings themselves are read by the provider dialects (:mod:`store.dialects`: one
reader per family in ``spec/ratelimit-headers.md``, :func:`store.dialects.registry.read_headers`
for an answer in any of them) into :class:`store.dialects.readings.Reading` values. Here:
which reading decides a key's headroom, and until when a key is blocked. Pure functions,
the clock passed in.
"""

from __future__ import annotations

from collections.abc import Iterable

from store.dialects.readings import Reading

# --- what the console and the selection ask --------------------------------------------------

def tightest(readings: Iterable[Reading], now: float) -> Reading | None:
    """The fresh reading with the least left: it decides the key's headroom."""
    fresh = [r for r in readings if not r.stale(now) and r.left is not None]
    return min(fresh, key=lambda r: (r.left, r.reset_at or 0.0), default=None)


def blocked_until(readings: Iterable[Reading], now: float, threshold: float = 0.0) -> float | None:
    """When a key may be picked again: the latest reset among windows at or under
    *threshold* of their limit left (0: only windows with nothing left). None: usable."""
    times = [r.reset_at for r in readings
             if r.reset_at is not None and r.reset_at > now and not r.stale(now)
             and r.left is not None and r.left <= threshold]
    return max(times, default=None)
