"""store.outside: the one checked parser for values from outside (RELIABILITY 34)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import outside

NOW = 1_800_000_000.0
anything = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=80), st.binary(max_size=80), st.lists(st.integers(), max_size=3),
    st.sampled_from(["1e290", "nan", "inf", "-inf", "Infinity", "1e+287", "0", "-1", "9" * 400,
                     "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z", "0001-01-01", "6m0s"]),
)


@given(anything)
def test_epoch_is_none_or_a_time_inside_the_bounds(value) -> None:
    t = outside.epoch(value, "reset", now=NOW)
    assert t is None or (math.isfinite(t) and outside.EARLIEST <= t <= NOW + outside.MAX_AHEAD)


@given(anything)
def test_numbers_and_counts_are_none_or_inside_the_bounds(value) -> None:
    n = outside.number(value, "x", lo=-5, hi=5)
    assert n is None or (math.isfinite(n) and -5 <= n <= 5)
    c = outside.count(value, "n")
    assert c is None or (isinstance(c, int) and 0 <= c <= outside.MAX_COUNT)
    s = outside.seconds(value, "d")
    assert s is None or 0 <= s <= outside.MAX_AHEAD


@pytest.mark.parametrize("value, expected", [
    (NOW + 30, NOW + 30),
    ((NOW + 30) * 1000, NOW + 30),               # milliseconds
    ("2027-01-15T08:00:00Z", NOW),             # RFC 3339
    ("2027-01-15T08:00:00", NOW),              # naive: UTC
    (str(NOW - 60), NOW - 60),                   # the past is a time; the caller judges it
    (1e290, None), (1e287, None), (float("nan"), None), (float("inf"), None), ("abc", None),
    (True, None), (None, None), (0, None), (-5, None), ("9" * 400, None),
])
def test_epoch_table(value, expected) -> None:
    assert outside.epoch(value, "reset", now=NOW) == expected


def test_a_discarded_value_is_said_without_echoing_a_long_one() -> None:
    said: list[str] = []
    key = "sk-or-v1-" + "c" * 48
    assert outside.epoch(key, "until", now=NOW, notice=said.append) is None
    assert outside.epoch(1e290, "Retry-After", now=NOW, notice=said.append) is None
    assert said[0] == "until: a 57-character string is not a time; ignored"
    assert said[1].startswith("Retry-After: 1e+290 lies more than 366 days ahead")
    assert key not in " ".join(said)
