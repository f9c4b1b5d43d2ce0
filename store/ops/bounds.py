"""Bounds on every number an operator gives, checked in the store layer so the CLI and
the console refuse the same values with the same words (exit 2, the bound named).
"""

from __future__ import annotations

import math
from typing import Any

from store.errors import BadInput

# A manual cooldown's horizon: the same for --for and --until.
MAX_COOLDOWN_SECONDS = 366 * 86400.0
MAX_LOCK_TIMEOUT = 3600.0
# Hermes renumbers priorities 0..n-1; a pool with ten thousand keys is already absurd.
MAX_PRIORITY = 10_000


def _number(value: Any, field: str) -> float:
    # The value is never echoed: an argument in the wrong place may be a key.
    if isinstance(value, bool):
        raise BadInput(field, "is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(field, "is not a number") from None
    if not math.isfinite(number):
        raise BadInput(field, "is not a finite number")
    return number


def cooldown_until(until_at: Any, now: float, field: str = "--until") -> float:
    """*until_at* if it lies after *now* and within MAX_COOLDOWN_SECONDS of it."""
    t = _number(until_at, field)
    if t <= now:
        raise BadInput(field, "is not in the future")
    if t - now > MAX_COOLDOWN_SECONDS:
        raise BadInput(field, f"is more than {MAX_COOLDOWN_SECONDS / 86400:g} days away "
                       "(the same horizon as --for)")
    return t


def lock_timeout(value: Any, field: str = "--lock-timeout") -> float:
    """A lock wait in seconds: finite, between 0 and MAX_LOCK_TIMEOUT."""
    t = _number(value, field)
    if not 0 <= t <= MAX_LOCK_TIMEOUT:
        raise BadInput(field, f"must be between 0 and {MAX_LOCK_TIMEOUT:g} seconds")
    return t


def priority(value: Any, field: str = "--priority") -> int:
    """A row position: an integer from 0 to MAX_PRIORITY."""
    p = _number(value, field)
    if not p.is_integer():
        raise BadInput(field, "is not a whole number")
    if not 0 <= p <= MAX_PRIORITY:
        raise BadInput(field, f"must be between 0 and {MAX_PRIORITY}")
    return int(p)
