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
from store.pools import policy

# --- what the console and the selection ask --------------------------------------------------

def tightest(readings: Iterable[Reading], now: float) -> Reading | None:
    """The fresh reading with the least left: it decides the key's headroom."""
    fresh = [r for r in readings if not r.stale(now) and r.left is not None]
    return min(fresh, key=lambda r: (r.left, r.reset_at or 0.0), default=None)


def reopens_at(r: Reading) -> float | None:
    """When *r*'s window may be used again, by this reading: its reset; for a window with
    nothing left, never sooner than the store's bench floor after it was read
    (:func:`store.pools.policy.bench_reset`). One rule, so the hold in memory, the bench in
    auth.json and a 503's ``Retry-After`` name the same time (a reset of ``1s`` or ``2ms``
    holds the key for the floor, in memory as in the store). None: no reset said."""
    if r.reset_at is None:
        return None
    return policy.bench_reset(r.reset_at, r.read_at) if r.left == 0.0 else r.reset_at


def blocked_until(readings: Iterable[Reading], now: float, threshold: float = 0.0, *,
                  floored: bool = False) -> float | None:
    """When a key may be picked again: the latest reset among windows at or under
    *threshold* of their limit left (0: only windows with nothing left), as the provider
    said it; *floored*: as long as a key is held, :func:`reopens_at` (a window with nothing
    left, never sooner than the store's bench floor after it was read). None: usable."""
    times = [t for r in readings
             if r.left is not None and r.left <= threshold
             and (t := reopens_at(r) if floored else r.reset_at) is not None and t > now]
    return max(times, default=None)
