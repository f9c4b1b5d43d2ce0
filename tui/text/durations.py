"""Parsing the durations and times operators type: ``90s``, ``15m``, ``2h``, ``1d``, ``1h30m``, ISO-8601."""

from __future__ import annotations

import re
from datetime import datetime

from store.durations import seconds_in

MAX_SECONDS = 366 * 86400


def parse_duration(text: str) -> float:
    """Seconds in ``90s``/``15m``/``2h``/``1d``/``1h30m``; ValueError saying what is accepted."""
    total = seconds_in(text or "")
    if total is None:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h, 1d or 1h30m")
    if total <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    if total > MAX_SECONDS:
        raise ValueError(f"{text!r} is longer than a year")
    return total


def parse_when(text: str, now: float) -> float:
    """An absolute time: ISO-8601 (no offset = local time), or ``HH:MM`` today/tomorrow."""
    raw = (text or "").strip()
    if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2})?", raw):
        base = datetime.fromtimestamp(now)
        parts = [int(p) for p in raw.split(":")]
        dt = base.replace(hour=parts[0], minute=parts[1], second=parts[2] if len(parts) > 2 else 0,
                          microsecond=0)
        ts = dt.timestamp()
        return ts if ts > now else ts + 86400
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a time like 2026-11-29T18:30, 2026-11-29T18:30Z or 18:30") from None
    return dt.timestamp()  # naive datetimes are local time


def parse_duration_or_time(text: str, now: float) -> float:
    """Either form, as the epoch second the cooldown ends."""
    try:
        return now + parse_duration(text)
    except ValueError:
        pass
    try:
        return parse_when(text, now)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a duration (90s, 15m, 2h, 1d) nor a time (18:30, 2026-11-29T18:30)"
        ) from None
