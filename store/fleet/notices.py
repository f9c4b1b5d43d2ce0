"""What the fleet says when data from Redis (or a Redis reply) is not what it should be.

A forged or corrupted value is a *notice*: counted, logged, never a crash and never a
write. A flood of bad messages must not flood the log either, so one text is logged at
most once per :data:`REPEAT_AFTER` seconds; every notice is counted.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

REPEAT_AFTER = 30.0
KEEP = 20


class Notices:
    """A notice sink: ``notices("host:x: keys 'abc' is not a number; ignored")``."""

    def __init__(self, log: Callable[[str], None] | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log or (lambda _msg: None)
        self.clock = clock
        self.count = 0
        self.recent: deque[str] = deque(maxlen=KEEP)
        self._last: dict[str, float] = {}
        self._mu = threading.Lock()

    def __call__(self, message: str) -> None:
        now = self.clock()
        with self._mu:
            self.count += 1
            self.recent.append(message)
            last = self._last.get(message)
            say = last is None or now - last >= REPEAT_AFTER
            if say:
                if len(self._last) > 1000:
                    self._last.clear()
                self._last[message] = now
        if say:
            self.log(f"fleet: {message}")
