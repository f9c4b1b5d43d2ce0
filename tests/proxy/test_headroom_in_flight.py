"""Requests in flight spend a key's last reading (#21): when a key's last answer said *n*
requests were left and *n* are on their way to it, the next pick goes to a key with room (the
answers coming will say 0; one more request would be the 429). A soft hold: with no other
key it is still used, and an answer (or a failure) releases it. Pure: a fake clock, no IO."""

from __future__ import annotations

from store.agent.outcomes import Selection
from store.config.settings import DEFAULTS
from store.dialects.registry import read_headers
from store.paths import Home
from store.pools.view import row_fingerprint
from store.proxy.routing.headroom_gate import HeadroomGate
from tests.conftest import make_row

T = 1_800_000_000.0
A = make_row("aaa111", token="sk-or-v1-" + "a" * 40)
B = make_row("bbb222", token="sk-or-v1-" + "b" * 40, priority=1)


def left(n: int) -> list:
    return read_headers({"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": str(n),
                         "x-ratelimit-reset-requests": "30s"}, T)


def gate(tmp_path) -> tuple[HeadroomGate, Selection]:
    g = HeadroomGate(Home(tmp_path), lambda: T, settings=DEFAULTS)
    return g, Selection("openrouter", "aaa111", "a", A["access_token"])


def test_requests_in_flight_spend_the_last_reading(tmp_path):
    g, sel = gate(tmp_path)
    first = g.sent(sel)
    g.observe(sel, left(2), first)                 # 2 left, nothing in flight: free
    assert not g.held("openrouter", [A, B], T, {})
    one, two = g.sent(sel), g.sent(sel)            # both on their way: they spend the 2
    assert g.held("openrouter", [A, B], T, {}) == {"aaa111"}
    assert not g.held("openrouter", [A], T, {})    # soft: with no other key, still used
    assert g.exhausted_until("openrouter", A, T, {}) is None     # no 503, no retry refused
    g.done(one)                                    # one failed on the way: room again
    assert not g.held("openrouter", [A, B], T, {})
    g.observe(sel, left(1), two)                   # its answer: 1 left, none in flight
    assert not g.held("openrouter", [A, B], T, {})


def test_a_ticket_closes_once(tmp_path):
    g, sel = gate(tmp_path)
    t = g.sent(sel)
    g.observe(sel, left(2), t)
    g.done(t)                                      # the finally after the answer: counted once
    g.done(t)
    g.sent(sel)
    assert not g.held("openrouter", [A, B], T, {})  # 2 left, 1 on its way
    g.sent(sel)
    assert g.held("openrouter", [A, B], T, {}) == {"aaa111"}


def test_control_without_counting_flights_the_key_is_picked_into_its_429(tmp_path):
    """Negative control: the same reading with the requests not counted leaves the key free,
    so a pick would send it the request the provider will refuse."""
    g, sel = gate(tmp_path)
    g.observe(sel, left(1), None)
    assert not g.held("openrouter", [A, B], T, {})
    assert row_fingerprint("openrouter", A) == sel.fingerprint   # bound to the same secret
