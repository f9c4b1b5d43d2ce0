"""``burn_rate``: a subscription window projected to run out within the rule's bound.

The headroom readings the monitor already samples carry, for subscription windows (``5h``,
``7d``...), the share of the window used (``utilization``). :class:`BurnHistory` keeps the
last few distinct readings of each (profile, pool, row, window), bounded, and forgets a
window's history when its use drops (the window reset) or its key changed secret. The rate is
the use's change per second between the oldest and newest points kept (at least
:data:`MIN_SPAN` apart, so two readings a second apart are no trend); the window runs out at
``newest.at + (1 - used) / rate``. The rule holds while that moment is within
``exhausts_within`` of now and before the window's own reset (a window that resets first does
not run out); it recovers when the projection moves out.

:func:`add` is pure (the history and the clock passed in); the history is the only state.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from store.agent.headroom import RowKey, RowReadings
from store.monitor import rules as R
from store.monitor.conditions import Evaluation, span, utc, who
from store.monitor.keyed import key_condition, pools_of, readings_of
from store.monitor.sample import Sample

KEEP = 12                 # points per window
MIN_SPAN = 60.0           # seconds between the oldest and newest point for a trend
MAX_WINDOWS = 200_000     # windows followed at once (10,000 pools of several keys)
RESET_DROP = 0.02         # a fall of the use by more than this is a window reset

WindowKey = tuple[str, str, str, str]   # (profile, pool, row id, window)


@dataclass(frozen=True)
class Trend:
    """One window's use as last read, and how fast it grows (share per second)."""

    used: float
    at: float
    rate: float
    reset_at: float | None
    source: str

    def exhausts_at(self) -> float | None:
        """When the window runs out at this rate (None: it does not grow, or resets first)."""
        if self.used >= 1.0:
            return self.at
        if not (self.rate > 0 and math.isfinite(self.rate)):
            return None
        t = self.at + (1.0 - self.used) / self.rate
        if not math.isfinite(t) or (self.reset_at is not None and t >= self.reset_at):
            return None
        return t


class BurnHistory:
    """The last :data:`KEEP` distinct readings of each subscription window, per profile."""

    def __init__(self) -> None:
        self._points: dict[WindowKey, deque[tuple[float, float]]] = {}
        self._fp: dict[WindowKey, str | None] = {}
        self._meta: dict[WindowKey, tuple[float | None, str]] = {}
        self._followed: set[str] = set()

    def observe(self, profile: str, headroom: Mapping[RowKey, RowReadings]) -> None:
        """Note the readings of one profile's headroom sidecar (repeats are ignored)."""
        for (pool, row_id), entry in headroom.items():
            for window, r in entry.windows.items():
                if r.utilization is None:
                    continue
                key = (profile, pool, row_id, window)
                points = self._points.get(key)
                if points is None or self._fp.get(key) != entry.fp:
                    if points is None and len(self._points) >= MAX_WINDOWS:
                        continue
                    points = self._points[key] = deque(maxlen=KEEP)
                    self._fp[key] = entry.fp
                if points and r.read_at <= points[-1][0]:
                    continue
                if points and r.utilization < points[-1][1] - RESET_DROP:
                    points.clear()
                points.append((r.read_at, r.utilization))
                self._meta[key] = (r.reset_at, r.source)

    def trend(self, profile: str, pool: str, row_id: str, window: str) -> Trend | None:
        """The window's trend, or None without two points :data:`MIN_SPAN` apart."""
        key = (profile, pool, row_id, window)
        points = self._points.get(key)
        if not points or len(points) < 2 or points[-1][0] - points[0][0] < MIN_SPAN:
            return None
        (t0, u0), (t1, u1) = points[0], points[-1]
        reset_at, source = self._meta[key]
        return Trend(u1, t1, (u1 - u0) / (t1 - t0), reset_at, source)

    def forget(self, profiles: set[str]) -> None:
        """Drop the history of profiles no longer followed (a pass only when that set changed)."""
        if profiles == self._followed:
            return
        self._followed = set(profiles)
        for key in [k for k in self._points if k[0] not in profiles]:
            self._points.pop(key, None)
            self._fp.pop(key, None)
            self._meta.pop(key, None)


def add(ev: Evaluation, sample: Sample, rules: R.Rules, history: BurnHistory, now: float) -> None:
    """Add the ``burn_rate`` conditions of *sample* to *ev*."""
    rule = rules[R.BURN_RATE]
    bound = rule.threshold or 0.0
    for p, pool, pv in pools_of(sample, rule):
        for cv, entry in readings_of(p, pv) if pv is not None else ():
            for window, r in entry.windows.items():
                trend = history.trend(p.name, pool, cv.id, window) if r.utilization is not None else None
                if trend is None or r.stale(now):
                    continue
                out = trend.exhausts_at()
                if out is None:
                    continue
                if out - now > bound:
                    ev.at(out - bound, now)       # it enters the bound by the clock alone
                    continue
                when = f"in {span(out - now)}" if out > now else "now"
                reset = f"; the window resets {utc(trend.reset_at)}" if trend.reset_at is not None else ""
                per_hour = trend.rate * 3600.0
                ev.add(key_condition(
                    rule, p, pool, cv, window, title=f"{who(p, cv)}: its {window} window runs out {when}",
                    text=f"{who(p, cv)}: {trend.used:.0%} of the {window} window used ({trend.source}), "
                         f"growing {per_hour:.1%} an hour: it runs out {when} ({utc(out)}){reset}, "
                         f"within the {span(bound)} this rule allows."))
