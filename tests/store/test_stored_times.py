"""Bad times are data errors, never crashes (issue 19): store.pools.times and the row's data error.

A stored time no calendar shows (``last_error_reset_at: 1e+287``, an ISO year 0001, an
integer too large for a float) keeps the status Hermes gives it (a bench that never ends,
a reset long past), and :attr:`policy.Effective.data_error` names the field. By property,
over every time field and any JSON value: the views and ``list --json`` never raise, and
a value that ``datetime`` cannot show in every time zone is always named in the data error.
The oracle is ``datetime`` itself, not the module's bounds. Negative controls: without the
calendar check no data error is given, and the property's check catches it.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.model import parse_epoch
from store.pools import policy, times, view
from tests.time_values import ABSURD, FIELDS, NOW, STORED_TIME, hostile_row

ZONES = (timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)))


def fits_everywhere(t: float) -> bool:
    """The oracle: ``datetime`` shows *t* in the time zones furthest east and west."""
    try:
        for tz in ZONES:
            datetime.fromtimestamp(t, tz)
    except (OverflowError, OSError, ValueError):
        return False
    return True


def build(row: dict[str, Any]) -> view.CredentialView:
    other = hostile_row("last_status_at", NOW - 1, rid="bbbbbb", status=None)
    (pv,) = view.build_pools({"credential_pool": {"openrouter": [row, other]}}, now=NOW)
    return next(cv for cv in pv.credentials if cv.id == row["id"])


def check_row(row: dict[str, Any], field: str) -> None:
    """What must hold for any stored value: no raise, strict JSON out, a data error naming
    *field* whenever its value is a time that cannot be shown."""
    cv = build(row)
    json.dumps(view.to_json("home", [view.PoolView("openrouter", "fill_first", [cv])], NOW))
    eff = cv.effective
    raw = row[field]["m"] if isinstance(row[field], dict) and field in times.PER_MODEL_FIELDS else row[field]
    t = parse_epoch(raw)
    if t is not None and not fits_everywhere(t):
        assert eff.data_error is not None and field in eff.data_error, (field, raw, eff.data_error)
    if eff.data_error is None:
        assert eff.available_at is None or not math.isfinite(eff.available_at) \
            or fits_everywhere(eff.available_at), (field, raw, eff)


def test_an_absurd_reset_keeps_the_bench_hermes_sees_and_says_why() -> None:
    cv = build(hostile_row("last_error_reset_at", ABSURD))
    eff = cv.effective
    assert eff.status == policy.COOLING and eff.available_at == ABSURD / 1000   # ms, as Hermes reads it
    assert eff.data_error == ("last_error_reset_at 1e+287 is not a time hermes-admin can show "
                              "(it lies after 9999-12-30)")
    assert cv.to_json()["data_error"] == eff.data_error


@pytest.mark.parametrize("field, value, words", [
    ("last_error_reset_at", "0001-01-01T00:00:00", "'0001-01-01T00:00:00' is not a time hermes-admin can "
                                                   "show (it lies before 0001-01-02)"),
    ("last_error_reset_at", "9999-12-31T23:59:59Z", "lies after 9999-12-30"),
    ("last_error_reset_at", 10**400, "last_error_reset_at a 401-digit number is not a usable time"),
    ("last_status_at", 1e300, "last_status_at 1e+300 is not a time"),
    ("status_cleared_at", "0001-01-01T00:00:00Z", "status_cleared_at '0001-01-01T00:00:00Z' is not a time"),
    ("expires_at", "0001-01-01T00:00:00+14:00", "expires_at '0001-01-01T00:00:00+14:00'"),
    ("expires_at_ms", 1e300, "expires_at_ms 1e+300"),
    ("model_cooldowns", 1e300, "model_cooldowns.m 1e+300"),
    ("model_cooldown_observed_at", "1e+287", "model_cooldown_observed_at.m '1e+287'"),
])
def test_each_time_field_off_the_calendar_is_named(field: str, value: Any, words: str) -> None:
    eff = build(hostile_row(field, value)).effective
    assert eff.data_error is not None and words in eff.data_error, eff.data_error


def test_a_cooldown_that_ends_off_the_calendar_is_named_when_no_field_is() -> None:
    # Each stored time is on the calendar; their sum (last_status_at + the TTL) is not.
    row = hostile_row("last_status_at", times.LATEST_SHOWN - 1)
    eff = build(row).effective
    assert eff.status == policy.COOLING and not times.on_calendar(eff.available_at)
    assert eff.data_error is not None and "the cooldown's end" in eff.data_error


def test_good_times_are_no_data_error() -> None:
    for field in FIELDS:
        assert build(hostile_row(field, NOW + 60)).effective.data_error is None, field


def test_on_calendar_bounds() -> None:
    assert times.on_calendar(times.EARLIEST_SHOWN) and times.on_calendar(times.LATEST_SHOWN)
    assert not times.on_calendar(times.EARLIEST_SHOWN - 1) and not times.on_calendar(times.LATEST_SHOWN + 1)
    for bad in (math.nan, math.inf, -math.inf, 10**400, True, "1", None, [1]):
        assert not times.on_calendar(bad)
    assert fits_everywhere(times.EARLIEST_SHOWN) and fits_everywhere(times.LATEST_SHOWN)


def test_an_integer_too_large_for_a_float_is_no_time() -> None:
    assert parse_epoch(10**400) is None and parse_epoch(-(10**400)) is None


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(FIELDS), value=STORED_TIME,
       status=st.sampled_from([None, "ok", "exhausted", "dead"]),
       reset=st.one_of(st.none(), STORED_TIME))
def test_any_stored_value_in_any_time_field_is_shown_or_named(field: str, value: Any, status: str | None,
                                                              reset: Any) -> None:
    extra = {} if field == "last_error_reset_at" else {"last_error_reset_at": reset}
    check_row(hostile_row(field, value, status=status, **extra), field)


def test_negative_control_without_the_calendar_check_no_data_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(times, "row_problems", lambda row: [])
    monkeypatch.setattr(times, "on_calendar", lambda t: True)
    row = hostile_row("last_error_reset_at", ABSURD)
    assert build(row).effective.data_error is None
    with pytest.raises(AssertionError):
        check_row(row, "last_error_reset_at")
