"""What the fleet says when data from Redis (or a Redis reply) is not what it should be.

A forged or corrupted value is a *notice*: counted, logged, never a crash and never a
write. A flood of bad messages must not flood the log either: one text is logged at most
once per :data:`REPEAT_AFTER` seconds, and at most :data:`LINES` lines per that window
(then one line saying how many were not shown); every notice is counted.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

REPEAT_AFTER = 30.0
LINES = 20
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
        self._window = (float("-inf"), 0, 0)     # (start, lines said, notices not said)
        self._mu = threading.Lock()

    def __call__(self, message: str) -> None:
        now = self.clock()
        lines: list[str] = []
        with self._mu:
            self.count += 1
            self.recent.append(message)
            start, said, held = self._window
            if now - start >= REPEAT_AFTER:
                if held:
                    lines.append(f"fleet: {held} more notices in the last {REPEAT_AFTER:g} s not shown")
                start, said, held = now, 0, 0
            last = self._last.get(message)
            if (last is None or now - last >= REPEAT_AFTER) and said < LINES:
                if len(self._last) > 1000:
                    self._last.clear()
                self._last[message] = now
                said += 1
                lines.append(f"fleet: {message}")
            else:
                held += 1
            self._window = (start, said, held)
        for line in lines:
            self.log(line)
