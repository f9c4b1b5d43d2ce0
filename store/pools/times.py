"""Stored times as hermes-admin shows them: the one check that a time fits on a calendar.

A time in auth.json was written by Hermes, an older hermes-admin, a proxy or any other
tool, and nothing bounds it: ``last_error_reset_at: 1e+287`` (a provider's absurd
``Retry-After`` stored as it came), an ISO year 0001, a huge integer. Hermes reads such a
value as it is (a bench that never ends, a reset long past), and so does
:mod:`store.pools.policy`; but no clock or calendar can show it, and
``datetime.fromtimestamp`` raises on it.

So every surface that shows a time asks :func:`on_calendar` first (the console's cells,
the detail view and the cooldown modal through ``tui.text.format``, ``list``, the
monitor's alerts), and shows :data:`BAD_TIME`, a symbol and a word, for a time it cannot
put on a calendar in every time zone. :func:`row_problems` says, for the row's data error,
which stored field holds such a time. Pure functions, no clock.
"""

from __future__ import annotations

import math
from typing import Any

from store.model import Row, parse_epoch
from store.outside import describe

# Dates every time zone can show (one day inside datetime's years 1 to 9999 on each side):
# 0001-01-02T00:00:00Z and 9999-12-30T00:00:00Z.
EARLIEST_SHOWN = -62135510400.0
LATEST_SHOWN = 253402128000.0
# The longest span between two times on the calendar: a countdown longer than this ends
# at no time that can be shown.
LONGEST_SHOWN = LATEST_SHOWN - EARLIEST_SHOWN

BAD_TIME = "⚠ bad time"

# Row fields that hold one time, and those that hold a time per model (newer Hermes).
TIME_FIELDS = ("last_status_at", "last_error_reset_at", "status_cleared_at", "expires_at",
               "expires_at_ms", "last_refresh", "agent_key_expires_at")
PER_MODEL_FIELDS = ("model_cooldowns", "model_cooldown_observed_at")


def on_calendar(t: Any) -> bool:
    """True when *t* is epoch seconds that every time zone can show as a date and time."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return False
    try:
        f = float(t)
    except OverflowError:  # an integer too large for a float
        return False
    return math.isfinite(f) and EARLIEST_SHOWN <= f <= LATEST_SHOWN


_TIME_CHARS = frozenset("0123456789+-.:TZtzeE ")


def named(value: Any) -> str:
    """*value* as a data error names it: a number or a time text as written (up to 40
    characters), anything else by its kind and length (it could be a key in the wrong field)."""
    if isinstance(value, str) and len(value) <= 40 and set(value) <= _TIME_CHARS:
        return repr(value)
    return describe(value)


def off_calendar(what: str, value: Any, t: float) -> str:
    """The data error for *what* holding *value*, a time *t* no calendar shows."""
    where = "before 0001-01-02" if t < EARLIEST_SHOWN else "after 9999-12-30"
    return f"{what} {named(value)} is not a time hermes-admin can show (it lies {where})"


def problem(what: str, value: Any) -> str | None:
    """Why the stored *value* of *what* cannot be shown as a time (None when it can, or when
    it is no time at all: an unparseable value is the caller's to judge)."""
    if value is None:
        return None
    t = parse_epoch(value)
    if t is None or on_calendar(t):
        return None
    return off_calendar(what, value, t)


def row_problems(row: Row) -> list[str]:
    """Every time field of *row* whose value parses to a time no calendar shows."""
    out: list[str] = []
    get = row.get
    for name in TIME_FIELDS:
        value = get(name)
        # Most stored times are plain epoch seconds: judged here, without parsing (a full
        # view of 10,000 rows asks this of every row).
        if value is None or (type(value) is float and 0.0 < value <= LATEST_SHOWN):
            continue
        p = problem(name, value)
        if p is not None:
            out.append(p)
    for name in PER_MODEL_FIELDS:
        per_model = get(name)
        if isinstance(per_model, dict):
            for model, value in per_model.items():
                p = problem(f"{name}.{model}", value)
                if p is not None:
                    out.append(p)
    return out


def reset_at_problem(row: Row) -> str | None:
    """Why the row's ``last_error_reset_at`` cannot be used (None when absent or usable).

    Hermes then ignores it and falls back to ``last_status_at + TTL`` (spec section 4),
    which is what :func:`store.pools.policy.until` computes; the raw value is shown so an operator can fix it.
    """
    value = row.get("last_error_reset_at")
    if value is None or value == "" or parse_epoch(value) is not None:
        return None
    shown = repr(value)
    if len(shown) > 40:   # a 400-digit number, a long text: named, not printed whole
        shown = describe(value)
    return f"last_error_reset_at {shown} is not a usable time; Hermes ignores it"


def data_problem(row: Row, until_at: float | None = None) -> str | None:
    """Everything wrong with the row's stored times, for :attr:`Effective.data_error`
    (None when nothing is): an unusable reset time, any time field holding a time no
    calendar shows, or a cooldown *until_at* that ends off it.
    The row's status is still judged as Hermes judges it; only what is shown changes."""
    problems = row_problems(row)
    reset = reset_at_problem(row)
    if reset is not None:
        problems.insert(0, reset)
    if not problems and until_at is not None and math.isfinite(until_at) and not on_calendar(until_at):
        problems.append(off_calendar("the cooldown's end", until_at, until_at))
    return "; ".join(problems) or None
