"""The route's circuit breakers (RELIABILITY 31): in memory, seconds long, growing while the
upstream stays down, closed by a success; shown in the status file and ``proxy status``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.routing import upstreams
from store.proxy.routing.upstreams import FIRST_OPEN, LONGEST_OPEN, Breakers, display, route_name
from tui.services.proxy_feed import breaker_text

BASE = "https://openrouter.ai/api/v1"
T0 = 1_800_000_000.0


def test_no_answer_opens_at_once_and_a_bad_answer_at_the_second_in_a_row() -> None:
    b = Breakers()
    b.failed(BASE, T0, answered=False, what="connect")
    assert b.blocked(BASE, T0) and b.reopens_at(BASE) == T0 + FIRST_OPEN
    other = "https://api.openai.com/v1"
    b.failed(other, T0, answered=True, what="503")
    assert not b.blocked(other, T0)              # one bad answer: another key may still try
    b.failed(other, T0 + 0.1, answered=True, what="503")
    assert b.blocked(other, T0 + 0.1)


def test_it_grows_while_down_is_capped_and_a_success_forgets() -> None:
    b = Breakers()
    t = T0
    lengths = []
    for _ in range(8):
        b.failed(BASE, t, answered=False, what="reset")
        until = b.reopens_at(BASE)
        lengths.append(until - t)
        # Requests sent before it opened fail too: they do not make it longer.
        b.failed(BASE, t + 0.01, answered=False, what="reset")
        assert b.reopens_at(BASE) == until
        t = until                                  # the trial after it closes fails again
    assert lengths[:4] == [FIRST_OPEN, 2 * FIRST_OPEN, 4 * FIRST_OPEN, 8 * FIRST_OPEN]
    assert max(lengths) == LONGEST_OPEN
    b.succeeded(BASE)
    assert not b and not b.blocked(BASE, t)
    b.failed(BASE, t, answered=False, what="reset")
    assert b.reopens_at(BASE) == t + FIRST_OPEN   # a fresh run starts short again


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 500), st.booleans(), st.booleans()), max_size=40))
def test_an_open_breaker_always_reopens_within_the_longest_bound(events) -> None:
    b = Breakers()
    t = T0
    for dt, answered, ok in events:
        t += dt
        if ok:
            b.succeeded(BASE)
        else:
            b.failed(BASE, t, answered=answered, what="x")
        until = b.reopens_at(BASE)
        assert until is None or until <= t + LONGEST_OPEN


def test_control_a_breaker_that_never_grows_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(upstreams, "LONGEST_OPEN", FIRST_OPEN)
    b = Breakers()
    b.failed(BASE, T0, answered=False, what="x")
    b.failed(BASE, T0 + FIRST_OPEN, answered=False, what="x")
    assert b.reopens_at(BASE) - (T0 + FIRST_OPEN) != 2 * FIRST_OPEN


@pytest.mark.parametrize("url,shown", [
    ("http://user:pw@10.0.0.5:8000/v1", "http://10.0.0.5:8000/v1"),
    ("https://sk-or-v1-secret@host/v1", "https://host/v1"),
    ("https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
])
def test_upstreams_and_routes_are_shown_without_userinfo(url, shown) -> None:
    assert display(url) == shown
    assert route_name("custom:" + url) == "custom:" + shown
    b = Breakers()
    b.failed(url, T0, answered=False, what="connect")
    assert b.snapshot(T0)[0]["upstream"] == shown


def test_proxy_status_says_which_upstream_is_down_and_that_no_key_was_benched() -> None:
    b = Breakers()
    b.failed(BASE, T0, answered=False, what="transport: connection refused")
    [u] = b.snapshot(T0 + 0.5)
    text = breaker_text(u, T0 + 0.5)
    assert "circuit open, tried again in 2 s" in text and "no key benched" in text
    assert "connection refused" in text

