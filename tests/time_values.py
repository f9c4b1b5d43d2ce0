"""Stored times as another tool may have written them (a helper module, not a test module).

:data:`STORED_TIME` draws what a time field of auth.json can hold once it is JSON: huge and
tiny floats (1e308, -1e308), integers too large for a float, numeric and ISO texts at the
edges of the calendar (years 0001 and 9999, with offsets), other strings, lists, objects,
booleans and null. NaN and Infinity are not JSON, so they are left out (the store refuses
them at the edge: store.outside). :func:`hostile_row` puts one such value in one time field
of a cooling row, the shape the console and ``list`` must show without raising.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from store.pools.times import PER_MODEL_FIELDS, TIME_FIELDS
from tests.conftest import make_row

NOW = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC, as tests/tui_sample.py

ABSURD = 1e287          # a provider's Retry-After: 1e290 as an older proxy stored it

EDGES: tuple[Any, ...] = (
    ABSURD, 1e308, -1e308, 1.7976931348623157e308, 5e-324, 0, -1, 1e12, 1e15, 2**63, -(2**63),
    10**30, 10**400, "1e+287", "1e308", "-1e308", "9" * 400, "0001-01-01T00:00:00",
    "0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00-12:00", "9999-12-31T23:59:59",
    "9999-12-31T23:59:59-12:00", "9999-12-31T23:59:59Z", "0001-01-01", "NaN", "Infinity", "",
    " ", "soon", [1], {"t": 1}, True, False, None,
)

STORED_TIME: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(EDGES),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(10**30), max_value=10**400),
    st.datetimes().map(lambda d: d.isoformat()),
    st.text(max_size=30),
    st.lists(st.integers(), max_size=2),
)
FIELDS: tuple[str, ...] = TIME_FIELDS + PER_MODEL_FIELDS


def hostile_row(field: str, value: Any, *, rid: str = "aaaaaa", token: str | None = None,
                status: str | None = "exhausted", **extra: Any) -> dict[str, Any]:
    """A row benched a moment ago whose *field* holds *value* (per model: under ``m``)."""
    row = make_row(rid, token=token or f"sk-or-v1-{rid}" + "0123456789abcdef" * 2, last_status=status,
                   last_status_at=NOW - 5, last_error_code=429, last_error_reason="rate_limit_exceeded",
                   **extra)
    row[field] = {"m": value} if field in PER_MODEL_FIELDS else value
    return row
