"""The live pins per row that the status tick reads (``Pins.held``, once a second) are kept as
pins change, not counted over every pin (up to 20,000): a property over served turns,
renewals, long TTLs, evictions past the bound and the clock moving, against a count over
every live pin done the old way. Negative control: a count not taken back when a pin is
evicted disagrees with the brute count."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from store.config.proxy_settings import Affinity
from store.dialects.dialect import OPENAI
from store.proxy.routing import pins as pins_mod
from store.proxy.routing.affinity import Conversation
from store.proxy.routing.pins import Pins
from store.proxy.routing.protocols import Want

STEPS = st.lists(st.tuples(st.sampled_from(["serve", "serve", "serve", "long", "tick"]),
                           st.sampled_from(["p", "q"]), st.integers(0, 3), st.integers(0, 7),
                           st.floats(0, 200)), min_size=1, max_size=80)


def want(text: str, **doc: object) -> Want:
    """A request of a conversation opened by *text* (its first user message)."""
    body = json.dumps({"messages": [{"role": "user", "content": text}], **doc}).encode()
    w = Want(OPENAI, body)
    w.conversation = Conversation(OPENAI, body)
    return w


def brute(pins: Pins, now: float) -> dict[str, dict[str, int]]:
    """Every live pin counted, as the status tick did before."""
    out: dict[str, dict[str, int]] = {}
    for (pool, _d), (row, until) in pins._pins.items():
        if now < until:
            per = out.setdefault(pool, {})
            per[row] = per.get(row, 0) + 1
    return out


def run(steps) -> list[str]:
    aff = Affinity(ttl=100.0, long_ttl=400.0)
    pins = Pins(lambda: aff, lambda: {"p": "round_robin", "q": "least_used"}, max_pins=5)
    now, wrong = 0.0, []
    for what, pool, row, conv, dt in steps:
        now += dt
        if what == "tick":
            if (got := pins.held(now)) != (want_ := brute(pins, now)):
                wrong.append(f"t={now:g}: kept {got}, counted {want_}")
        else:
            sys1h = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
            w = want(f"c{conv}", **({"system": sys1h} if what == "long" else {}))
            pins.served(pool, f"r{row}", w, now)
    for later in (now, now + 150.0, now + 1000.0):
        if (got := pins.held(later)) != (want_ := brute(pins, later)):
            wrong.append(f"end t={later:g}: kept {got}, counted {want_}")
    return wrong


@settings(max_examples=150, deadline=None)
@given(steps=STEPS)
def test_kept_counts_are_the_live_pins(steps):
    assert run(steps) == []


def test_a_tick_costs_the_pins_that_ended_not_every_pin():
    aff = Affinity(ttl=100.0)
    pins = Pins(lambda: aff, lambda: {"p": "round_robin"}, max_pins=20_000)
    for i in range(20_000):
        pins.served("p", f"r{i % 7}", want(f"c{i}"), 0.0)
    assert sum(pins.held(1.0)["p"].values()) == 20_000
    assert len(pins._ends) == 20_000           # one end per pin; a tick before any end pops none
    pins.held(50.0)
    assert len(pins._ends) == 20_000 and pins.held(100.0) == {} and not pins._ends


def test_control_a_count_not_taken_back_on_eviction_is_caught(monkeypatch):
    steps = [("serve", "p", i % 3, i, 1.0) for i in range(8)] + [("tick", "p", 0, 0, 1.0)]
    assert run(steps) == []
    real = pins_mod.Pins._count
    monkeypatch.setattr(pins_mod.Pins, "_count", lambda self, pool, row, by: real(self, pool, row, max(by, 0)))
    assert run(steps), "a count never taken back went unnoticed"
