"""RELIABILITY 28 (bounds): every number an operator gives is bounded in store/ops/bounds.py,
exit 2 naming the bound; the CLI's --lock-timeout and --until/--for use them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import BadInput
from store.ops import bounds
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store

NOW = 1_800_000_000.0


@pytest.mark.parametrize("value, word", [
    ("nan", "finite"), ("inf", "finite"), ("-inf", "finite"), (math.nan, "finite"), ("-1", "between"),
    ("3601", "between"), ("1e400", "finite"), ("ten", "not a number"), (True, "not a number"), (None, "not a number"),
])
def test_lock_timeout_bound(value, word) -> None:
    with pytest.raises(BadInput, match=word) as err:
        bounds.lock_timeout(value)
    assert err.value.field == "--lock-timeout" and err.value.exit_code == 2


@pytest.mark.parametrize("value", ["0", 0, "30", 3600, "0.5"])
def test_lock_timeout_accepts(value) -> None:
    assert bounds.lock_timeout(value) == float(value)


@pytest.mark.parametrize("until, word", [
    (NOW, "future"), (NOW - 1, "future"), (NOW + bounds.MAX_COOLDOWN_SECONDS + 1, "days away"),
    (253402300799.0, "days away"), (math.inf, "finite"), (math.nan, "finite"),
])
def test_until_bound(until, word) -> None:
    with pytest.raises(BadInput, match=word):
        bounds.cooldown_until(until, NOW)


def test_until_accepts_the_horizon_exactly() -> None:
    assert bounds.cooldown_until(NOW + bounds.MAX_COOLDOWN_SECONDS, NOW) == NOW + bounds.MAX_COOLDOWN_SECONDS


@pytest.mark.parametrize("value, word", [(-1, "between"), (bounds.MAX_PRIORITY + 1, "between"),
                                         (1.5, "whole"), ("x", "not a number"), (math.inf, "finite"),
                                         (10**30, "between")])
def test_priority_bound(value, word) -> None:
    with pytest.raises(BadInput, match=word):
        bounds.priority(value)


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12) | st.integers())
def test_bounds_never_raise_anything_but_bad_input(value) -> None:
    for check in (bounds.lock_timeout, bounds.priority, lambda v: bounds.cooldown_until(v, NOW)):
        try:
            check(value)
        except BadInput:
            pass


def _store(home: Home) -> bytes:
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token="sk-or-v1-" + "b" * 32)]}})
    return home.auth.read_bytes()


@pytest.mark.parametrize("args, bound", [
    (("--lock-timeout", "nan", "reset", "openrouter", "aaaaaa"), "finite"),
    (("cooldown", "openrouter", "aaaaaa", "--until", "9999-12-31"), "days away"),
    (("cooldown", "openrouter", "aaaaaa", "--until", "2001-01-01"), "future"),
])
def test_cli_bounds_exit_2_and_write_nothing(tmp_home: Home, args, bound) -> None:
    raw = _store(tmp_home)
    proc = run_cli(tmp_home, *args, ok=False)
    assert proc.returncode == 2 and bound in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert tmp_home.auth.read_bytes() == raw


def test_negative_control_a_range_check_alone_lets_nan_through() -> None:
    """The check the CLI had before: NaN compares false both ways and slipped past it."""
    v = float("nan")
    assert not (v < 0 or v > 3600)
    with pytest.raises(BadInput):
        bounds.lock_timeout(v)


@pytest.mark.parametrize("args", [("priority", "openrouter", "aaaaaa", "99999999999"),
                                  ("priority", "openrouter", "aaaaaa", "-1"),
                                  ("priority", "openrouter", "aaaaaa", "sk-or-v1-" + "k" * 32)])
def test_cli_priority_is_bounded_and_never_echoes_the_value(tmp_home: Home, args) -> None:
    raw = _store(tmp_home)
    proc = run_cli(tmp_home, *args, ok=False)
    assert proc.returncode == 2 and "argument N" in proc.stderr, proc.stderr
    assert args[-1] not in proc.stderr
    assert tmp_home.auth.read_bytes() == raw
