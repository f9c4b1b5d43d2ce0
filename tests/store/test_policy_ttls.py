"""Ttls.from_mapping, exactly: every key maps to its own field, every bad value names the
key and the value (written to kill the mutants `make mutate` found surviving)."""

from __future__ import annotations

import pytest

from store.pools.policy import Ttls


@pytest.mark.parametrize("key, attr", [("401", "auth_401"), ("429", "rate_limit_429"), ("default", "default"),
                                       ("only_row", "only_row_cap"), ("billing_unverified", "billing_unverified")])
def test_each_key_sets_only_its_own_field(key: str, attr: str) -> None:
    ttls = Ttls.from_mapping({key: 7})
    assert getattr(ttls, attr) == 7.0 and isinstance(getattr(ttls, attr), float)
    others = {a: getattr(Ttls(), a) for a in ("auth_401", "rate_limit_429", "default", "only_row_cap",
                                               "billing_unverified") if a != attr}
    assert {a: getattr(ttls, a) for a in others} == others


def test_integer_keys_are_read_as_their_text() -> None:
    assert Ttls.from_mapping({429: 10}).rate_limit_429 == 10.0


@pytest.mark.parametrize("data", [None, {}])
def test_nothing_configured_is_the_defaults(data) -> None:
    assert Ttls.from_mapping(data) == Ttls()
    assert (Ttls().auth_401, Ttls().rate_limit_429, Ttls().default, Ttls().only_row_cap,
            Ttls().billing_unverified) == (300.0, 3600.0, 3600.0, 60.0, 60.0)


def test_zero_is_allowed() -> None:
    assert Ttls.from_mapping({"default": 0}).default == 0.0


def test_unknown_key_names_it_and_the_known_ones() -> None:
    with pytest.raises(ValueError) as err:
        Ttls.from_mapping({"418": 5})
    assert str(err.value) == "unknown TTL '418' (known: 401, 429, default, only_row, billing_unverified, entitlement)"


@pytest.mark.parametrize("value", [True, False, "60", None, -1, -0.5, [1]])
def test_bad_values_name_key_and_value(value) -> None:
    with pytest.raises(ValueError) as err:
        Ttls.from_mapping({"429": value})
    assert str(err.value) == f"TTL '429' must be a number of seconds >= 0, got {value!r}"
