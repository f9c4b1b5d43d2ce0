"""One reader of durations written as number-unit parts: ``90s``, ``15m``, ``1h30m``, ``2d``, ``6m0s``.

Operators type them (``cooldown --for 2h``, the monitor's rules file: units ``s m h d w``);
providers send them (``x-ratelimit-reset-requests: 6m0s``, ``1h2m3.5s``, ``12ms``: Go's
units ``h m s ms us µs ns``). Each caller names the units it accepts and keeps its own
bounds and wording (a positive duration, at most a year, an error naming its field); this
module only reads the text. Units are case-blind, parts may be separated by spaces, and a
text longer than :data:`MAX_TEXT` or a number with more than 12 digits is no duration: a
hostile value costs a bounded look.
"""

from __future__ import annotations

import re

UNIT_SECONDS: dict[str, float] = {
    "w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0,
    "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
}
OPERATOR_UNITS = frozenset({"s", "m", "h", "d", "w"})
GO_UNITS = frozenset({"h", "m", "s", "ms", "us", "µs", "ns"})
MAX_TEXT = 64

# "ms" before "m": ``5ms`` is five milliseconds, ``6m0s`` six minutes and no seconds.
_PART = re.compile(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|us|µs|ns|[smhdw])", re.IGNORECASE)


def seconds_in(text: str, units: frozenset[str] = OPERATOR_UNITS) -> float | None:
    """The seconds *text* says, when all of it is number-unit parts in *units*; else None.

    ``seconds_in("1h30m") == 5400.0``; ``seconds_in("6m0s", GO_UNITS) == 360.0``;
    ``seconds_in("5ms")`` is None (milliseconds are not an operator's unit); ``"90"``,
    ``"1x"``, ``""`` and ``"1h 30"`` are None. Never raises for a string.
    """
    raw = text.strip()
    if not raw or len(raw) > MAX_TEXT:
        return None
    total, pos = 0.0, 0
    while pos < len(raw):
        m = _PART.match(raw, pos)
        if m is None:
            return None
        unit = m.group(2).lower()
        if unit not in units:
            return None
        total += float(m.group(1)) * UNIT_SECONDS[unit]
        pos = m.end()
    return total
