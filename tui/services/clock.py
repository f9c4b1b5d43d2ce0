"""The clock the console reads, injectable so tests and snapshots are deterministic."""

from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], float]
"""A callable returning epoch seconds (``time.time`` in production)."""

system_clock: Clock = time.time


class FakeClock:
    """A hand-driven clock for tests: ``clock()`` returns ``now``; ``advance(s)`` moves it."""

    def __init__(self, now: float) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now
