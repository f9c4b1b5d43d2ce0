"""Text forms shared by the CLI and the TUI: countdowns, nulls, times, statuses."""

from __future__ import annotations

import math
from datetime import datetime

from store.pools.view import NULL as NULL

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
    if math.isinf(seconds):
        return "never"
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
    if not math.isfinite(seconds) or seconds <= 0:
        return math.inf
    s = int(math.ceil(seconds))
    unit = 1 if s < 600 else 60 if s < 86400 else 3600
    return max(0.0, seconds - ((s // unit) * unit - 1))


def local_time(epoch: float | None, now: float | None = None) -> str:
    """Absolute local time; the date is shown only when it is not today."""
    if epoch is None or math.isinf(epoch):
        return NULL
    dt = datetime.fromtimestamp(epoch)
    if now is not None and datetime.fromtimestamp(now).date() == dt.date():
        return dt.strftime("%H:%M:%S")
    return dt.strftime("%Y-%m-%d %H:%M")


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
