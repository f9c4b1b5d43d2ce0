"""Values from outside hermes-admin, checked once at the edge (RELIABILITY 34).

Every time or count that arrives from a network peer (a provider's headers and bodies,
Redis hashes and messages) or from a file another program wrote passes one of these
functions before anything acts on it. A value that is not a finite number inside its
bound is discarded: the function returns None and, when given a *notice*, says so once,
in words that never echo a long value (a key in the wrong field must not be printed).

The bounds are the operator's: a time at most :data:`MAX_AHEAD` from now (a year, the
horizon of ``cooldown --until``), never before :data:`EARLIEST`; a count at most
:data:`MAX_COUNT`. Pure functions; the clock is passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

MAX_AHEAD = 366 * 86400.0            # seconds: no reset, bench or duration beyond this
EARLIEST = 946_684_800.0             # 2000-01-01T00:00:00Z: an epoch before it is nonsense
MAX_COUNT = 10**12                   # requests, tokens, credits: a trillion is already absurd
_MAX_TEXT = 64                       # a numeric text longer than this is not a number

Notice = Callable[[str], None]


def describe(value: Any) -> str:
    """A value named without echoing it when it could be a secret: short numbers as they
    are, anything else by its type and length."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else f"a {len(text)}-digit number"
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if len(text) <= 24 and all(c in "0123456789+-.eEinfatyINFATYN:TZ " for c in text):
            return repr(text)
        return f"a {len(text)}-character {'string' if isinstance(value, str) else 'byte string'}"
    return f"a {type(value).__name__}"


def _discard(notice: Notice | None, what: str, value: Any, why: str) -> None:
    if notice is not None:
        notice(f"{what}: {describe(value)} {why}; ignored")
    return None


def _float(value: Any) -> float | None:
    """A float from an int, a float or a short numeric text; None otherwise (bool included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        value = value.strip()
        if not value or len(value) > _MAX_TEXT:
            return None
    elif not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def number(value: Any, what: str, *, lo: float, hi: float, notice: Notice | None = None) -> float | None:
    """*value* as a finite float in [lo, hi], or None (said through *notice*)."""
    f = _float(value)
    if f is None:
        return _discard(notice, what, value, "is not a number")
    if not math.isfinite(f):
        return _discard(notice, what, value, "is not a finite number")
    if not lo <= f <= hi:
        return _discard(notice, what, value, f"is outside {lo:g}..{hi:g}")
    return f


def count(value: Any, what: str, *, hi: int = MAX_COUNT, notice: Notice | None = None) -> int | None:
    """A whole number from 0 to *hi*, or None."""
    f = number(value, what, lo=0, hi=hi, notice=notice)
    if f is None:
        return None
    if not f.is_integer():
        return _discard(notice, what, value, "is not a whole number")
    return int(f)


def seconds(value: Any, what: str, *, hi: float = MAX_AHEAD, notice: Notice | None = None) -> float | None:
    """A duration in seconds from 0 to *hi* (a year by default), or None."""
    return number(value, what, lo=0.0, hi=hi, notice=notice)


def epoch(value: Any, what: str, *, now: float, ahead: float = MAX_AHEAD,
          notice: Notice | None = None) -> float | None:
    """An absolute time as epoch seconds, or None.

    Accepts epoch seconds, epoch milliseconds (over 1e12) and ISO-8601 / RFC 3339 text
    (a naive time is UTC). The time must lie between :data:`EARLIEST` and *now* + *ahead*:
    a reset time in the past is a time (the caller decides what it means), a reset a
    century away is not.
    """
    t = _epoch(value)
    if t is None:
        return _discard(notice, what, value, "is not a time")
    if not math.isfinite(t):
        return _discard(notice, what, value, "is not a finite time")
    if t < EARLIEST:
        return _discard(notice, what, value, "lies before 2000")
    if t > now + ahead:
        return _discard(notice, what, value, f"lies more than {ahead / 86400:g} days ahead")
    return t


def _epoch(value: Any) -> float | None:
    f = _float(value)
    if f is not None:
        return f / 1000.0 if abs(f) > 1e12 else f
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT:
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
