"""The credential table's countdown clock: which rows are cooling, and when to wake.

:class:`CountdownClock` keeps every cooling row's end time (pool by pool, so a pool
nobody wrote to is never walked) and the one timer of the table. It sleeps until the
next moment a visible countdown's text changes (within a second under ten minutes; at a
minute boundary for ``59m``; see tui.text.format) or any cooldown ends, whichever is
first: one one-shot timer, no wake-up that changes nothing. With no cooling row on
screen only the cooldown ends wake it, so header counts and the next-pick marker move.
It decides; the table writes the cells it names.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from textual.timer import Timer

from tui.text.format import countdown, countdown_changes_in
from tui.widgets.rows import Entry
from tui.widgets.table_rows import Intake

SetTimer = Callable[..., Timer]   # Widget.set_timer


def ends_at(e: Entry) -> float | None:
    """When the credential row *e*'s cooldown ends (None: not cooling, or a header)."""
    cv = e.cred
    if cv is None:
        return None
    eff = cv.effective
    return eff.available_at if eff.status == "cooling" and eff.available_at is not None else None


class CountdownClock:
    """Cooling rows and their end times, the table's time, and its one timer."""

    def __init__(self) -> None:
        self._cooling: dict[str, float] = {}
        self._pool_cooling: dict[str, dict[str, float]] = {}
        self._pool_flip: dict[str, float] = {}     # per pool: its soonest cooldown end
        self._next_flip: float | None = math.inf   # None: to work out from _pool_flip
        self.now = 0.0     # the time the table's cells were last brought to
        self._ticker: Callable[[], None] | None = None
        self._clock: Callable[[], float] | None = None   # the screen's clock (start)
        self._set_timer: SetTimer | None = None
        self._timer: Timer | None = None
        self._ticking = False

    # ----------------------------------------------------------- cooling rows
    def take(self, intake: Intake) -> None:
        """Follow a reconcile: the pools walked whole or gone are counted again, of a
        patched pool only its changed rows, and the untouched pools not at all."""
        for p in intake.fresh | intake.gone:
            self._drop_pool(p)
        for p, rows in intake.blocks:
            if p in intake.fresh:
                self._take_pool(p, rows)
            elif p in intake.patched:
                self._patch_pool(p, intake.patched[p])

    def _take_pool(self, pool: str, rows: Iterable[Entry]) -> None:
        """A pool walked whole: its cooling rows are these rows'."""
        cooling = {e.key: t for e in rows if (t := ends_at(e)) is not None}
        self._pool_cooling[pool] = cooling
        self._cooling.update(cooling)
        self._pool_flip[pool] = min(cooling.values(), default=math.inf)
        self._next_flip = None

    def _patch_pool(self, pool: str, changed: Iterable[Entry]) -> None:
        """Only *changed* rows of a pool were taken: bring just their cooldowns up to date."""
        cooling = self._pool_cooling.setdefault(pool, {})
        for e in changed:
            if e.cred is None:
                continue
            t = ends_at(e)
            if t is None:
                if cooling.pop(e.key, None) is not None:
                    self._cooling.pop(e.key, None)
            else:
                cooling[e.key] = self._cooling[e.key] = t
        self._pool_flip[pool] = min(cooling.values(), default=math.inf)
        self._next_flip = None

    def _drop_pool(self, pool: str) -> None:
        for k in self._pool_cooling.pop(pool, {}):
            self._cooling.pop(k, None)
        self._pool_flip.pop(pool, None)
        self._next_flip = None

    def clear(self) -> None:
        self._cooling, self._pool_cooling, self._pool_flip = {}, {}, {}
        self._next_flip = math.inf

    def cooling_keys(self) -> dict[str, float]:
        """Row key -> cooldown end of every cooling row (a copy)."""
        return dict(self._cooling)

    @property
    def any_cooling(self) -> bool:
        return bool(self._cooling)

    def cooling_among(self, keys: Iterable[str]) -> bool:
        cooling = self._cooling
        return any(k in cooling for k in keys)

    @property
    def next_flip(self) -> float:
        """The soonest cooldown end of any row (inf when none cools)."""
        if self._next_flip is None:
            self._next_flip = min(self._pool_flip.values(), default=math.inf)
        return self._next_flip

    def flip(self, now: float) -> list[str]:
        """Move the table's time to *now* and forget the cooldowns that have ended by then;
        return their row keys."""
        self.now = now
        if now < self.next_flip:
            return []
        flipped = [k for k, t in self._cooling.items() if t <= now]
        for k in flipped:
            del self._cooling[k]
        for pool, part in self._pool_cooling.items():
            for k in flipped:
                part.pop(k, None)
            self._pool_flip[pool] = min(part.values(), default=math.inf)
        self._next_flip = min(self._cooling.values(), default=math.inf)
        return flipped

    def stale(self, now: float, keys: Sequence[str],
              text_of: Callable[[str], str]) -> list[tuple[str, str]]:
        """(row key, new text) for the cooling rows of *keys* whose countdown text
        (*text_of*) is not the one for *now*."""
        out = []
        cooling = self._cooling
        for key in keys:
            t = cooling.get(key)
            if t is None:
                continue
            text = countdown(t - now)
            if text_of(key) != text:
                out.append((key, text))
        return out

    # ----------------------------------------------------------- the timer
    def start(self, callback: Callable[[], None], clock: Callable[[], float] | None,
              set_timer: SetTimer) -> None:
        """Call *callback* whenever a visible countdown's text changes or a cooldown ends
        (from :meth:`arm`). *clock* is the screen's: the table's own last time may be
        old after a quiet spell."""
        self._ticker = callback
        self._clock = clock
        self._set_timer = set_timer

    def current(self) -> float:
        """The table's time, brought up to the screen's clock."""
        if self._clock is not None:
            self.now = max(self.now, self._clock())
        return self.now

    def arm(self, visible: Sequence[str]) -> None:
        """Set the one timer for the next change among the *visible* rows, or for the
        next cooldown end anywhere when none of them cools."""
        if self._ticker is None or self._set_timer is None:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = None
        now = self.current()
        self._ticking = self.cooling_among(visible)
        wake = self.next_flip - now
        if self._ticking:
            cooling = self._cooling
            for key in visible:
                t = cooling.get(key)
                if t is not None:
                    wake = min(wake, countdown_changes_in(t - now))
        if math.isfinite(wake):
            # A hair after the boundary, so the text computed then is the new one.
            self._timer = self._set_timer(max(0.02, wake + 0.02), self._ticker,
                                          name="countdown" if self._ticking else "flip")

    @property
    def ticking(self) -> bool:
        """True while a visible countdown keeps the timer on its per-second pace."""
        return self._ticking

    @property
    def timer(self) -> Timer | None:
        """The pending wake-up (named "countdown" or "flip"), if any."""
        return self._timer
