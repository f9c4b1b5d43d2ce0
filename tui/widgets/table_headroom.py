"""The credential table's headroom cells: each row's readings, their text, and when a text
changes by itself (a reading going stale at its window's reset).

:class:`HeadroomCells` holds what the sidecar said per (view pool key, row id), bound to
each row's secret when a cell is made (tui.text.headroom). It says which rows' readings
moved (their cells are made again, nothing else), how wide the column's longest text is,
and keeps the one timer that wakes the table when some cell must turn ``stale``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from textual.timer import Timer

from tui.text import headroom as words

Key = tuple[str, str]    # (view pool key, row id): as a row's marks and notes


class HeadroomCells:
    """Readings by row, the column's widest text, and the wake-up for texts that go stale."""

    def __init__(self) -> None:
        self.readings: Mapping[Key, Any] = {}
        self.need = 0                       # the longest text any row with readings may show
        self._changes = math.inf            # the soonest moment a cell's text changes by itself
        self._at = 0.0                      # when the texts were last measured
        self._timer: Timer | None = None

    def cell(self, key: Key, fp: str | None, now: float) -> tuple[str, str]:
        """The (text, style) of the row *key* whose secret's fingerprint is *fp*."""
        return words.cell(words.bound(self.readings.get(key), fp), now)

    def of(self, key: Key) -> Any:
        """What the row's cell depends on, but the clock (part of its signature)."""
        return self.readings.get(key)

    def set(self, readings: Mapping[Key, Any], now: float, fps: Mapping[Key, str | None]) -> set[Key]:
        """Take the sidecar's readings (*fps*: the secret each shown row holds now); the rows
        whose readings moved."""
        old, self.readings = self.readings, readings
        moved = {k for k in old.keys() | readings.keys() if old.get(k) != readings.get(k)} if old or readings \
            else set()
        if moved:
            self._measure(now, fps)
        return moved

    def due(self, now: float, fps: Mapping[Key, str | None]) -> set[Key]:
        """The rows some reading of which has gone stale by *now* (their text changes)."""
        if now < self._changes:
            return set()
        out = {k for k, e in self.readings.items() if words.changes_at(e.windows.values(), self._at) <= now}
        self._measure(now, fps)
        return out

    def _measure(self, now: float, fps: Mapping[Key, str | None]) -> None:
        """The widest text and the next change, over the readings bound to a shown row's
        secret (readings of a secret the row no longer holds show nothing, so need no room)."""
        need, changes = 0, math.inf
        for k, e in self.readings.items():
            if k not in fps or fps[k] != e.fp:
                continue
            windows = e.windows.values()
            need = max(need, len(words.cell(windows, now)[0]))
            changes = min(changes, words.changes_at(windows, now))
        self.need, self._changes, self._at = need, changes, now

    def arm(self, set_timer: Callable[..., Timer], wake: Callable[[], None], now: float) -> None:
        """One timer for the next cell that turns stale (none while none will)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if math.isfinite(self._changes):
            self._timer = set_timer(max(0.05, self._changes - now + 0.05), wake, name="headroom")
