"""Text forms shared by the CLI and the TUI: countdowns, nulls, times, statuses.

Every time the console or the CLI shows passes :func:`local_time`, :func:`full_time`,
:func:`countdown` or :func:`relative`: a stored time no calendar shows (``1e+287``, an ISO
year 0001; :mod:`store.pools.times`) is shown as :data:`BAD_TIME` (``⚠ bad time``) or, in a
countdown, :data:`BAD_SPAN`, never raised on. The row's data error says what it holds.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from store.pools.times import BAD_TIME as BAD_TIME
from store.pools.times import LONGEST_SHOWN, on_calendar
from store.pools.view import NULL as NULL

# A countdown to a time no calendar shows: a symbol and a word that fit the table's
# 8-cell "left" column (``⚠ bad time`` would be cut there).
BAD_SPAN = "⚠ bad"

# Every state has a word and a symbol, so colour is never the only signal.
STATUS_SYMBOL = {"ok": "●", "cooling": "◐", "ready": "○", "dead": "✖"}


def countdown(seconds: float | None) -> str:
    """Coarse countdown, as kubectl and k9s show ages: seconds only under ten minutes
    (``9m 30s``, ``45s``), then ``59m``, ``1h 12m``, ``6d 23h``.

    Seconds of a cooldown an hour away tell an operator nothing, and a countdown whose
    text changes once a minute is a row the console does not redraw every second (20
    visible cooling rows ticking each second cost a console 0.5-0.8% of a core here).
    """
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return NULL
    if isinstance(seconds, float) and math.isinf(seconds):
        return "never"
    if not abs(seconds) <= LONGEST_SHOWN:
        return BAD_SPAN
    s = max(0, int(math.ceil(seconds)))
    days, rem = divmod(s, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes >= 10:
        return f"{minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def countdown_changes_in(seconds: float) -> float:
    """Seconds until :func:`countdown` of a cooldown *seconds* away shows other text: within
    a second under ten minutes, at the next minute boundary under a day, else at the next
    hour. The console sleeps until then instead of waking every second."""
    if not math.isfinite(seconds) or seconds <= 0 or seconds > LONGEST_SHOWN:
        return math.inf   # never changes: over, or a countdown to no time (BAD_SPAN)
    s = int(math.ceil(seconds))
    unit = 1 if s < 600 else 60 if s < 86400 else 3600
    return max(0.0, seconds - ((s // unit) * unit - 1))


def _local(epoch: Any) -> datetime | None:
    """*epoch* as a local datetime, or None when no calendar shows it."""
    if not on_calendar(epoch):
        return None
    try:
        return datetime.fromtimestamp(epoch)
    except (OverflowError, OSError, ValueError):
        return None


def local_time(epoch: float | None, now: float | None = None) -> str:
    """Absolute local time; the date is shown only when it is not today."""
    if epoch is None or (isinstance(epoch, float) and math.isinf(epoch)):
        return NULL
    dt = _local(epoch)
    if dt is None:
        return BAD_TIME
    today = _local(now) if now is not None else None
    if today is not None and today.date() == dt.date():
        return dt.strftime("%H:%M:%S")
    return dt.strftime("%Y-%m-%d %H:%M")


def clock_time(epoch: Any) -> str:
    """Local ``HH:MM:SS`` of an epoch from a status file; ``—`` for no number."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return NULL
    dt = _local(epoch)
    return BAD_TIME if dt is None else dt.strftime("%H:%M:%S")


def full_time(epoch: Any) -> str:
    """Local date and time to the second (a detail view, the audit log)."""
    if epoch is None:
        return NULL
    dt = _local(epoch)
    return BAD_TIME if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S")


def relative(epoch: float, now: float) -> str:
    """``in 5m 0s`` or ``2h 3m ago``; :data:`BAD_TIME` for a time no calendar shows."""
    if not on_calendar(epoch):
        return BAD_TIME
    if epoch > now:
        return f"in {countdown(epoch - now)}"
    return f"{countdown(now - epoch)} ago"


def remaining(seconds: float | None) -> str:
    """``59m 30s left`` for a cooldown, :data:`BAD_TIME` when it ends on no calendar."""
    text = countdown(seconds)
    return BAD_TIME if text == BAD_SPAN else f"{text} left"


def countdown_to(epoch: float, now: float) -> str:
    """:func:`countdown` to *epoch*, or :data:`BAD_TIME` when no calendar shows it."""
    return countdown(epoch - now) if on_calendar(epoch) else BAD_TIME


# "dead" is a light red, not ANSI red: red is dark (237 on 235 under NO_COLOR, 3.6:1 in colour).
# "cooling" is a hex yellow: ANSI yellow is the theme's orange, which 16 colours turn into red.
# every state keeps >= 4.5:1 against the table in 16/256 colours and NO_COLOR (tests/console/test_contrast.py).
STATUS_STYLE = {"ok": "green", "cooling": "#ffd75f", "ready": "cyan", "dead": "bold #ff8080"}


def status_word(status: str) -> str:
    """Symbol and word, e.g. ``◐ cooling``: readable with NO_COLOR and 16 colours."""
    return f"{STATUS_SYMBOL.get(status, '?')} {status}"


def ellipsize(text: str, width: int) -> str:
    """Cut *text* to *width* cells with a trailing ``…`` (fixed-width columns)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + "…" if width > 1 else "…"


def time_left(status: str, seconds_left: float | None) -> str:
    """The "left" column: a countdown while cooling, ``never`` for dead, else ``—``."""
    if status == "cooling":
        return countdown(seconds_left)
    if status == "dead":
        return "never"
    return NULL
