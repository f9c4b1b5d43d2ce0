"""Pool views rebuilt only for the pools that changed: a reload's cost follows the write.

A write to one row of a 10,000-credential store used to rebuild 10,000 views and
diff 10,000 pairs (about 0.6 s here). A pool's previous view is reused when its rows
compare equal, the strategy, TTLs and environment are the same, and no cooldown in
it has ended since the view was built (the only way a view changes with the clock).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from . import events, policy
from .model import Doc, pools
from .view import PoolView, build_pool


def valid_until(pv: PoolView, built_at: float) -> float:
    """When *pv*'s statuses can next move by themselves (a cooldown or a per-model bench
    ending), else inf."""
    times = [at for cv in pv.credentials
             for at in (cv.effective.available_at, *cv.effective.model_benches.values())
             if at is not None and math.isfinite(at) and at > built_at]
    return min(times, default=math.inf)


class PoolCache:
    """The last view of each pool, with what it was built from."""

    def __init__(self) -> None:
        self._views: dict[str, tuple[Any, list, float, PoolView]] = {}

    def build(
        self, doc: Doc | None, *, strategies: Mapping[str, str], now: float,
        ttls: policy.Ttls, env: Mapping[str, str],
    ) -> tuple[list[PoolView], set[str]]:
        """(views of every pool at *now*, keys of the pools rebuilt or gone)."""
        raw = pools(doc) if doc is not None else {}
        ctx = (tuple(sorted(strategies.items())), ttls, tuple(sorted(env.items())))
        out: list[PoolView] = []
        fresh: dict[str, tuple[Any, list, float, PoolView]] = {}
        changed = set(self._views) - set(raw)
        for key in sorted(raw):
            rows = raw[key]
            hit = self._views.get(key)
            current = hit is not None and hit[0] == ctx and now < hit[2]
            if current and (hit[1] is rows or hit[1] == rows):
                pv = hit[3]
            else:
                pv = build_pool(key, rows, strategy=strategies.get(key) or "fill_first", now=now,
                                ttls=ttls, env=env, previous=hit[3] if current else None)
                changed.add(key)
            until = hit[2] if hit is not None and pv is hit[3] else valid_until(pv, now)
            fresh[key] = (ctx, rows, until, pv)
            out.append(pv)
        self._views = fresh
        return out, changed


def diff_changed(old: list[PoolView] | None, new: list[PoolView], changed: set[str],
                 at: float) -> list[events.Event]:
    """events.diff restricted to *changed* pools: an unchanged pool's views are the same
    objects, so they can hold no event."""
    if old is None:
        return []
    before = [pv for pv in old if pv.key in changed]
    after = [pv for pv in new if pv.key in changed]
    # A credential view reused from the last build is the same object: no event in it.
    kept = {id(cv) for pv in after for cv in pv.credentials} & {id(cv) for pv in before for cv in pv.credentials}
    if kept:
        before = [_without(pv, kept) for pv in before]
        after = [_without(pv, kept) for pv in after]
    return events.diff(before, after, at)


def _without(pv: PoolView, kept: set[int]) -> PoolView:
    return PoolView(pv.key, pv.strategy, [cv for cv in pv.credentials if id(cv) not in kept])
