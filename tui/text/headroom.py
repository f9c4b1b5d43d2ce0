"""A key's headroom in words, for the dashboard's column, the detail view and ``list``.

Pure functions of a row's readings (:class:`store.agent.headroom.RowReadings`, bound to the
row's secret by its fingerprint) and the clock. The column shows the tightest fresh window
as a small bar, a number and a word (``▕███░░▏ 38% 5h``, ``▕░░░░░▏ 12/500 rpm``); a reading
past its window says ``stale`` in words; colour is never the only signal. :func:`fit` cuts
a cell to a narrower column, bar first, the number and the word last.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from store.agent.ratelimits import tightest
from store.dialects.readings import MINUTE, Reading
from tui.text.format import NULL, STATUS_STYLE, countdown, full_time, local_time, relative

LOW = 0.10          # at or under this share left, the cell is drawn in the cooling colour too
BAR = 5             # cells inside the bar's ends at full width
HALF = "▌"         # half a cell (finer parts would look like the bar's own ends)
STALE = "stale"
_COUNT = re.compile(r"^(\d+(?:\.\d)?[kM]?)/(\d+(?:\.\d)?[kM]?)$")

# Short names for the windows the reader makes (store.agent.ratelimits); others as they are.
_PER_MINUTE = {"requests": "rpm", "tokens": "tpm", "tokens-usage": "tpm", "input-tokens": "in-tpm",
               "output-tokens": "out-tpm"}


def word(r: Reading) -> str:
    """The window in a word: ``rpm``, ``tpm``, ``5h``, ``7d sonnet``, ``credits``."""
    if r.window in _PER_MINUTE:
        if r.length in (None, MINUTE):
            return _PER_MINUTE[r.window]
        return r.window.replace("-", " ")
    return r.window.replace("_", " ")


def _amount(n: float) -> str:
    """A count as it fits a cell: ``12``, ``160k``, ``2.5M``."""
    if n >= 1e6:
        return f"{n / 1e6:.1f}M".replace(".0M", "M")
    if n >= 1e4:
        return f"{n / 1e3:.0f}k"
    return f"{n:.0f}" if float(n).is_integer() or n >= 100 else f"{n:.1f}"


def number(r: Reading) -> str:
    """``12/500`` when the provider gave both counts, else the share left, ``38%``."""
    if r.remaining is not None and r.limit:
        return f"{_amount(r.remaining)}/{_amount(r.limit)}"
    left = r.left
    return NULL if left is None else percent(left)


def percent(left: float) -> str:
    """A share as a whole percent; under 1% but not nothing reads ``<1%``."""
    if 0 < left < 0.005:
        return "<1%"
    return f"{round(left * 100):.0f}%"


def bar(left: float, cells: int = BAR) -> str:
    """``▕███░░▏``: *cells* cells between the ends, filled to the share *left* in halves."""
    halves = round(max(0.0, min(1.0, left)) * cells * 2)
    inner = "█" * (halves // 2) + (HALF if halves % 2 else "")
    return "▕" + inner + "░" * (cells - len(inner)) + "▏"


def shown_reading(readings: Iterable[Reading], now: float) -> tuple[Reading | None, bool]:
    """(the reading the column shows, whether it is stale): the tightest fresh window, else
    the newest stale one (said as stale), else none."""
    readings = list(readings)
    r = tightest(readings, now)
    if r is not None:
        return r, False
    known = [x for x in readings if x.left is not None]
    return (max(known, key=lambda x: x.read_at), True) if known else (None, False)


def bound(entry: Any, fp: str | None) -> list[Reading]:
    """The readings of *entry* (a RowReadings, or None) if they are the secret *fp*'s."""
    if entry is None or entry.fp != fp:
        return []
    return list(entry.windows.values())


def cell(readings: Iterable[Reading], now: float) -> tuple[str, str]:
    """(text, style) of the headroom column for one row's readings."""
    r, stale = shown_reading(readings, now)
    if r is None:
        return NULL, ""
    if stale:
        return f"{STALE} {number(r)} {word(r)}", ""
    left = r.left if r.left is not None else 0.0
    return f"{bar(left)} {number(r)} {word(r)}", STATUS_STYLE["cooling"] if left <= LOW else ""


def need(text: str) -> int:
    """Cells the column needs for *text* whole."""
    return len(text)


def fit(text: str, width: int) -> str:
    """*text* (from :func:`cell`) cut to *width*: a shorter bar, then no bar, then the share
    instead of the counts, then the word alone; never a number cut in half."""
    if len(text) <= width:
        return text
    if text.startswith(STALE + " "):
        parts = text.split(" ")
        for form in (f"{STALE} {' '.join(parts[2:])}", STALE):
            if len(form) <= width:
                return form
        return text[:width]
    if not text.startswith("▕") or "▏ " not in text:
        return _ellipsize(text, width)
    gauge, rest = text.split("▏ ", 1)
    num, _, name = rest.partition(" ")
    left = _share(num, gauge)
    short = f"{percent(left)} {name}"
    for body in (rest, short):
        for cells in range(BAR - 1, 0, -1):
            form = f"{bar(left, cells)} {body}"
            if len(form) <= width:
                return form
        if len(body) <= width:
            return body
    for form in (percent(left), name):
        if len(form) <= width:
            return form
    return _ellipsize(short, width)


def _share(num: str, gauge: str) -> float:
    m = _COUNT.match(num)
    if m:
        a, b = _unamount(m.group(1)), _unamount(m.group(2))
        return a / b if b else 0.0
    if num.endswith("%") and num[:-1].lstrip("<").isdigit():
        return 0.001 if num.startswith("<") else int(num[:-1]) / 100
    inner = gauge[1:]
    return sum(1.0 if c == "█" else 0.5 if c == HALF else 0.0 for c in inner) / max(1, len(inner))


def _unamount(text: str) -> float:
    scale = {"k": 1e3, "M": 1e6}.get(text[-1], 1.0)
    return float(text.rstrip("kM")) * scale


def _ellipsize(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + "…"


def changes_at(readings: Iterable[Reading], now: float) -> float:
    """When the cell's text changes by itself (a reading going stale), else inf."""
    times = [t for r in readings if (t := r.reset_at if r.reset_at is not None else r.read_at + (r.length or MINUTE))
             > now]
    return min(times, default=math.inf)


# --- the detail view and list ------------------------------------------------------------------

def window_lines(readings: Iterable[Reading], now: float) -> list[tuple[str, str, str]]:
    """(field, value, meaning) per window, tightest first: what is left, and when it resets
    as an absolute time and a countdown; a stale reading says so and is never shown as now."""
    out = []
    for r in sorted(readings, key=lambda x: (x.stale(now), x.left if x.left is not None else 2.0, x.window)):
        amount = (f"{_amount(r.remaining)} of {_amount(r.limit)} left" if r.remaining is not None and r.limit
                  else f"{percent(r.left)} left" if r.left is not None else NULL)
        if r.left is not None and r.remaining is not None and r.limit:
            amount += f" ({percent(r.left)})"
        read = f"{r.source}, read {relative(r.read_at, now)}"
        if r.stale(now):
            value = f"{STALE}: {amount} when read"
            why = f"reset passed at {full_time(r.reset_at)}" if r.reset_at is not None else "older than its window"
            meaning = f"{why}; not current · {read}"
        else:
            value = amount
            if r.reset_at is not None:
                meaning = f"resets {local_time(r.reset_at, now)} · in {countdown(r.reset_at - now)} · {read}"
            else:
                meaning = f"no reset given; stale after {countdown(r.read_at + (r.length or MINUTE) - now)} · {read}"
        out.append((f"headroom {word(r)}", value, meaning))
    return out


def rules_line(threshold: float) -> tuple[str, str, str]:
    """The rules the proxy and the agents follow, as one line of the detail view."""
    yielding = (f"at or under {percent(threshold)} left it yields to keys above that" if threshold > 0
                else "no threshold: it serves down to its last request")
    return ("headroom rules", f"threshold {percent(threshold)}",
            "nothing left until a reset: not picked until then (agents also bench it in the store); "
            f"{yielding}; a reading past its reset is stale, never current")


def as_json(readings: Iterable[Reading], now: float) -> dict[str, Any] | None:
    """``list --json``'s ``headroom`` of one credential (None without readings)."""
    readings = list(readings)
    if not readings:
        return None
    r, stale = shown_reading(readings, now)

    def one(x: Reading) -> dict[str, Any]:
        return {**x.as_json(), "left": x.left, "stale": x.stale(now)}
    return {"tightest": None if r is None or stale else one(r),
            "windows": [one(x) for x in sorted(readings, key=lambda x: x.window)]}


def list_text(readings: Iterable[Reading], now: float) -> str | None:
    """``list``'s words: ``headroom 12/500 rpm (resets in 29s)`` or ``headroom stale ...``."""
    r, stale = shown_reading(readings, now)
    if r is None:
        return None
    if stale:
        return f"headroom {STALE} ({number(r)} {word(r)} when read)"
    reset = f" (resets in {countdown(r.reset_at - now)})" if r.reset_at is not None else ""
    return f"headroom {number(r)} {word(r)}{reset}"


def lookup(headroom: Mapping[Any, Any], pool: str, rid: str, fp: str | None) -> list[Reading]:
    """The readings a home's sidecar holds for (*pool*, *rid*), if they are its secret's."""
    return bound(headroom.get((pool, rid)), fp)
