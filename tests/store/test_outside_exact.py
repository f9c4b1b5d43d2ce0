"""store.outside to the value: every bound at its edge, every notice word for word, every
form of time it accepts (tests/store/test_outside.py holds the properties)."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from store import outside
from store.outside import EARLIEST, MAX_AHEAD, count, describe, epoch, number, seconds

NOW = 1_900_000_000.0


def _heard(fn, *args, **kw) -> tuple[object, list[str]]:
    said: list[str] = []
    return fn(*args, notice=said.append, **kw), said


@pytest.mark.parametrize("value,shown", [
    (None, "None"), (True, "True"), (1.5, "1.5"), (10**23, repr(10**23)), (10**24, "a 25-digit number"),
    ("12:00Z", "'12:00Z'"), ("1E5", "'1E5'"), ("inf", "'inf'"), (" NaN", "' NaN'"), ("9" * 24, repr("9" * 24)),
    ("9" * 25, "a 25-character string"), ("abc", "a 3-character string"), ("sk-or-v1-secret", "a 15-character string"),
    (b"42", "'42'"), (b"\xff\xfe", "a 2-character byte string"), (b"key", "a 3-character byte string"),
    ("1X", "a 2-character string"), ([1], "a list"), ({"a": 1}, "a dict"),
])
def test_describe_names_a_value_without_echoing_it(value, shown) -> None:
    assert describe(value) == shown


def test_number_keeps_its_bounds_inclusive_and_says_why_it_drops() -> None:
    assert number(0, "x", lo=0, hi=10) == 0.0 and number(10, "x", lo=0, hi=10) == 10.0
    assert _heard(number, -0.5, "reset", lo=0, hi=10) == (None, ["reset: -0.5 is outside 0..10; ignored"])
    assert _heard(number, 10.5, "reset", lo=0, hi=10) == (None, ["reset: 10.5 is outside 0..10; ignored"])
    assert _heard(number, "abc", "reset", lo=0, hi=10) == (
        None, ["reset: a 3-character string is not a number; ignored"])
    assert _heard(number, "inf", "reset", lo=0, hi=10) == (None, ["reset: 'inf' is not a finite number; ignored"])
    assert _heard(number, 5, "reset", lo=0, hi=10) == (5.0, [])
    assert number(b"5", "x", lo=0, hi=10) == 5.0 and number(b"\xff", "x", lo=0, hi=10) is None
    assert number(" 7 ", "x", lo=0, hi=10) == 7.0
    assert number("0" * 63 + "1", "x", lo=0, hi=10) == 1.0           # 64 characters: still a number
    assert number("0" * 64 + "1", "x", lo=0, hi=10) is None           # 65: not a number
    assert number("", "x", lo=0, hi=10) is None and number(False, "x", lo=0, hi=10) is None


def test_count_is_a_whole_number_from_zero() -> None:
    assert count(0, "n") == 0 and count("12", "n") == 12 and count(outside.MAX_COUNT, "n") == outside.MAX_COUNT
    assert _heard(count, 1.5, "tokens") == (None, ["tokens: 1.5 is not a whole number; ignored"])
    assert _heard(count, "x", "tokens") == (None, ["tokens: a 1-character string is not a number; ignored"])
    assert _heard(count, -1, "tokens") == (None, [f"tokens: -1 is outside 0..{outside.MAX_COUNT:g}; ignored"])
    assert _heard(count, 11, "tokens", hi=10) == (None, ["tokens: 11 is outside 0..10; ignored"])


def test_seconds_is_a_duration_up_to_a_year() -> None:
    assert seconds(0, "d") == 0.0 and seconds(MAX_AHEAD, "d") == MAX_AHEAD
    assert _heard(seconds, "x", "retry-after") == (None, ["retry-after: a 1-character string is not a number; ignored"])
    assert _heard(seconds, 5, "retry-after", hi=4) == (None, ["retry-after: 5 is outside 0..4; ignored"])


def test_epoch_bounds_are_inclusive_and_named() -> None:
    assert epoch(EARLIEST, "t", now=NOW) == EARLIEST
    assert epoch(NOW + MAX_AHEAD, "t", now=NOW) == NOW + MAX_AHEAD
    assert epoch(NOW + 10, "t", now=NOW, ahead=10) == NOW + 10
    assert _heard(epoch, EARLIEST - 1, "reset", now=NOW) == (None, ["reset: 946684799.0 lies before 2000; ignored"])
    assert _heard(epoch, NOW + 11, "reset", now=NOW, ahead=10) == (
        None, [f"reset: {NOW + 11!r} lies more than {10 / 86400:g} days ahead; ignored"])
    assert _heard(epoch, "soon", "reset", now=NOW) == (None, ["reset: a 4-character string is not a time; ignored"])
    assert _heard(epoch, "nan", "reset", now=NOW) == (None, ["reset: 'nan' is not a finite time; ignored"])


def test_epoch_reads_milliseconds_above_1e12_only() -> None:
    assert epoch(NOW * 1000, "t", now=NOW) == NOW
    assert epoch(1e12, "t", now=NOW) is None                        # 1e12 seconds: 31,000 years ahead
    assert epoch(1e12 + 0.5, "t", now=NOW) == pytest.approx(1e9)    # just above: milliseconds
    assert epoch(-(NOW * 1000), "t", now=NOW) is None


@pytest.mark.parametrize("text", ["2030-03-17T17:46:40Z", "2030-03-17T17:46:40z", "2030-03-17T17:46:40+00:00",
                                  "2030-03-17T19:46:40+02:00", "2030-03-17T17:46:40", " 2030-03-17T17:46:40Z "])
def test_epoch_reads_iso_text_in_utc_whatever_the_local_zone(text: str, monkeypatch) -> None:
    want = datetime(2030, 3, 17, 17, 46, 40, tzinfo=timezone.utc).timestamp()
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert epoch(text, "t", now=NOW) == want
        assert epoch(text.encode(), "t", now=NOW) == want
    finally:
        monkeypatch.undo()
        time.tzset()


def test_epoch_text_is_bounded_by_its_raw_length() -> None:
    iso = "2030-03-17T17:46:40Z"
    assert epoch(iso + " " * (64 - len(iso)), "t", now=NOW) is not None    # 64 characters
    assert epoch(iso + " " * (65 - len(iso)), "t", now=NOW) is None        # 65
    assert epoch("   ", "t", now=NOW) is None and epoch(b"\xff2030", "t", now=NOW) is None
