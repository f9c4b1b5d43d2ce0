"""What ``least_used`` minimises (``store.pools.least_used.least_used_key``), value by value.

Hermes's key is (request count, priority). hermes-admin's headroom option puts the share of
quota left first, to the percent, clamped to 0..100, an unread row counting as full. The
exact tuples pin each part: a share off by one percent, a clamp that lets 150 % through, or
a tie broken by anything but the request count would each change one of them.
"""

from __future__ import annotations

import pytest

from store.pools.least_used import least_used_key
from tests.conftest import make_row


def test_hermes_key_is_the_count_then_the_priority():
    key = least_used_key()
    assert key(make_row("a", priority=3, request_count=7)) == (7, 3)
    assert key(make_row("a", priority=0, request_count="12")) == (12, 0)
    assert key(make_row("a", priority=2, request_count=None)) == (0, 2)


@pytest.mark.parametrize("left,share", [
    (None, 100),        # no reading speaks for the row: full
    (1.0, 100),
    (1.7, 100),         # a reading past the limit is clamped
    (0.5, 50),
    (0.234, 23),
    (0.236, 24),        # to the nearest percent
    (0.0, 0),
    (-0.4, 0),
])
def test_headroom_share_comes_first_to_the_percent(left, share):
    key = least_used_key(lambda r: left)
    assert key(make_row("a", priority=4, request_count=9)) == (-share, 9, 4)


def test_with_headroom_equal_shares_fall_back_to_the_count_then_priority():
    rows = [make_row("a", priority=0, request_count=5), make_row("b", priority=1, request_count=2),
            make_row("c", priority=2, request_count=2)]
    key = least_used_key(lambda r: 0.5)
    assert [r["id"] for r in sorted(rows, key=key)] == ["b", "c", "a"]
    left = {"a": 0.9, "b": 0.3, "c": None}
    key = least_used_key(lambda r: left[r["id"]])
    assert [r["id"] for r in sorted(rows, key=key)] == ["c", "a", "b"]
