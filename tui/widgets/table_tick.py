"""The countdown of CredentialTable: visible cooling rows only, or nothing.

The table sleeps until the next moment a visible countdown's text changes (within a
second under ten minutes; at a minute boundary for ``59m``; see tui.text.format) or any
cooldown ends, whichever is first: one one-shot timer, no wake-up that changes nothing.
With no cooling row on screen only the cooldown ends wake it, so header counts and the
next-pick marker move.
"""

from __future__ import annotations

import math
from typing import Callable

from tui.text.format import countdown, countdown_changes_in


class CountdownTick:
    """Rewrite one cell per visible cooling row per second; sleep when none is visible."""

    def visible_range(self) -> range:
        """Row indices currently on screen."""
        top = int(self.scroll_y)
        return range(top, min(top + max(0, self.size.height - 1), len(self._order)))

    def visible_cooling(self) -> bool:
        order, cooling = self._order, self._cooling
        return any(order[i] in cooling for i in self.visible_range())

    def start_ticking(self, callback: Callable[[], None],
                      clock: Callable[[], float] | None = None) -> None:
        """Call *callback* whenever a visible countdown's text changes or a cooldown ends.
        *clock* is the screen's: the table's own last time may be old after a quiet spell."""
        self._ticker = callback
        self._clock = clock
        self._arm()

    def _current(self) -> float:
        if self._clock is not None:
            self._now = max(self._now, self._clock())
        return self._now

    def _arm(self) -> None:
        if self._ticker is None:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = None
        now = self._current()
        self._ticking = self.visible_cooling()
        wake = self._next_flip - now
        if self._ticking:
            order, cooling = self._order, self._cooling
            for i in self.visible_range():
                t = cooling.get(order[i])
                if t is not None:
                    wake = min(wake, countdown_changes_in(t - now))
        if math.isfinite(wake):
            # A hair after the boundary, so the text computed then is the new one.
            self._timer = self.set_timer(max(0.02, wake + 0.02), self._ticker,
                                         name="countdown" if self._ticking else "flip")

    @property
    def ticking(self) -> bool:
        """True while the one-second tick runs."""
        return self._ticking

    def tick(self, now: float) -> list[str]:
        """Refresh on-screen countdowns; return the keys whose cooldown has just ended."""
        self._now = now
        flipped: list[str] = []
        if now >= self._next_flip:
            flipped = [k for k, t in self._cooling.items() if t <= now]
            for k in flipped:
                del self._cooling[k]
            for pool, part in self._pool_cooling.items():
                for k in flipped:
                    part.pop(k, None)
                self._pool_flip[pool] = min(part.values(), default=math.inf)
            self._next_flip = min(self._cooling.values(), default=math.inf)
        self.refresh_countdowns(now)
        self._arm()
        return flipped

    def refresh_countdowns(self, now: float | None = None) -> int:
        """Rewrite the countdown cell of on-screen cooling rows whose text changed."""
        now = self._now if now is None else now
        changed = []
        for i in self.visible_range():
            key = self._order[i]
            t = self._cooling.get(key)
            if t is None:
                continue
            text = countdown(t - now)
            if self._row(key)["left"][0] != text:
                self.write_countdown(key, text)
                changed.append(key)
        self._refresh_rows(changed)
        return len(changed)

    def write_countdown(self, row_key: str, text: str) -> None:
        """Set a countdown cell; the row's version bump re-renders that row alone."""
        self._row(row_key)["left"] = (text, "")
        self._versions[row_key] = next(self._seq)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            if self.materialize_visible():
                self._relayout()
            if self._cooling:
                self.refresh_countdowns(self._current())
                self._arm()
