"""Pins in memory (store.proxy.routing.pins): kept for the TTL (the long one for the 1-hour
cache), bounded in number, only for rotating strategies, yielding past the share bound; and
the pin as a preference in selection (store.proxy.routing.picks.choose): taken when
allowed, never when a filter refuses it."""

from __future__ import annotations

import json
import random

import pytest

from store.config.proxy_settings import Affinity
from store.dialects.dialect import ANTHROPIC, OPENAI
from store.proxy.routing import pins as pins_mod
from store.proxy.routing.affinity import Conversation
from store.proxy.routing.picks import Usable, choose
from store.proxy.routing.pins import Pins, pinned
from store.proxy.routing.protocols import Want


class Sel:
    def __init__(self, pool: str, row_id: str) -> None:
        self.pool, self.row_id = pool, row_id


def want(text: str = "hello", protocol: str = OPENAI, **doc: object) -> Want:
    body = json.dumps({"messages": [{"role": "user", "content": text}], **doc}).encode()
    w = Want(protocol, body)
    w.conversation = Conversation(protocol, body)
    return w


def make(strategy: str = "round_robin", **aff: object) -> tuple[Pins, dict]:
    settings = {"a": Affinity(**aff)}
    strategies = {"p": strategy}
    return Pins(lambda: settings["a"], lambda: strategies), settings


def test_a_served_turn_pins_its_conversation_for_the_ttl():
    pins, _ = make(ttl=300.0)
    w = want()
    assert pins.prefer("p", w, 0.0, 2) is None
    pins.served("p", "r1", w, 0.0)
    w2 = want()                                  # the next turn: a new request, the same conversation
    assert pins.prefer("p", w2, 299.0, 2) == "r1" and pinned(w2, Sel("p", "r1"))
    assert not pinned(w2, Sel("p", "r0"))
    assert pins.prefer("p", want(), 300.0, 2) is None      # expired
    assert pins.prefer("p", want("another"), 10.0, 2) is None


def test_the_one_hour_cache_keeps_the_pin_for_long_ttl():
    pins, _ = make(ttl=300.0, long_ttl=3600.0)
    sys1h = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    pins.served("p", "r1", want(protocol=ANTHROPIC, system=sys1h), 0.0)
    assert pins.prefer("p", want(protocol=ANTHROPIC, system=sys1h), 3000.0, 2) == "r1"
    assert pins.prefer("p", want(protocol=ANTHROPIC, system=sys1h), 3600.0, 2) is None


def test_a_ttl_of_an_hour_from_the_settings_holds_every_pin_that_long():
    pins, _ = make(ttl=3600.0)
    pins.served("p", "r1", want(), 0.0)
    assert pins.prefer("p", want(), 3000.0, 2) == "r1"


def test_pins_are_bounded_and_the_least_recently_served_goes_first():
    pins, _ = make()
    pins.max_pins = 3
    for i in range(5):
        pins.served("p", f"r{i}", want(f"c{i}"), float(i))
    assert len(pins) == 3
    assert pins.prefer("p", want("c0"), 5.0, 2) is None and pins.prefer("p", want("c4"), 5.0, 2) == "r4"
    assert pins.held(5.0) == {"p": {"r2": 1, "r3": 1, "r4": 1}}


@pytest.mark.parametrize(("strategy", "applies"), [("round_robin", True), ("least_used", True), ("random", True),
                                                    ("fill_first", False), ("nonsense", False)])
def test_only_rotating_strategies_pin(strategy, applies):
    pins, _ = make(strategy)
    pins.served("p", "r1", want(), 0.0)
    assert (pins.prefer("p", want(), 1.0, 2) == "r1") is applies
    assert len(pins) == (1 if applies else 0)


def test_affinity_off_pins_nothing():
    pins, _ = make(enabled=False)
    pins.served("p", "r1", want(), 0.0)
    assert pins.prefer("p", want(), 1.0, 2) is None and len(pins) == 0


def test_the_pin_yields_past_its_share_and_holds_within_it():
    pins, _ = make(max_share=0.5)
    for i in range(10):                         # r1 served 10 of the last 10: far past 0.6 (0.5 + slack)
        pins.served("p", "r1", want(), float(i) / 10)
    assert pins.prefer("p", want(), 1.0, 2) is None and pins.moved["share"] == 1
    for i in range(10):                         # now 10 of 20: within it
        pins.served("p", "r0", want("other"), 1.0 + i / 10)
    assert pins.prefer("p", want(), 2.0, 2) == "r1"


def test_the_share_window_forgets_traffic_older_than_a_minute():
    pins, _ = make(max_share=0.5)
    for i in range(10):
        pins.served("p", "r1", want(), float(i))
    assert pins.prefer("p", want(), 10.0, 2) is None
    # a minute later the window is empty (fewer than SHARE_SAMPLE answers): the pin holds
    assert pins.prefer("p", want(), 10.0 + pins_mod.WINDOW, 2) == "r1"


def test_max_share_off_never_yields():
    pins, _ = make(max_share=None)
    for i in range(50):
        pins.served("p", "r1", want(), float(i) / 10)
    assert pins.prefer("p", want(), 5.0, 2) == "r1"


def test_the_share_bound_is_never_below_a_fair_share_with_slack():
    pins, _ = make(max_share=0.1)               # 0.1 on a two-key pool would move every turn
    for i in range(6):
        pins.served("p", "r1", want(), float(i))
        pins.served("p", "r0", want("b"), float(i))
    assert pins.prefer("p", want(), 6.0, 2) == "r1"            # 0.5 <= 1/2 + slack


def rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "priority": i, "request_count": 0} for i in range(n)]


def test_choose_takes_the_pinned_row_without_moving_the_round_robin_order():
    rs = rows(3)
    usable = Usable(0, float("inf"), "round_robin", list(rs), list(rs))
    chosen, held, reordered = choose(usable, rs, random.Random(0), None, None, pin="r2")
    assert chosen["id"] == "r2" and chosen["request_count"] == 1 and not held and not reordered
    assert [r["id"] for r in usable.rows] == ["r0", "r1", "r2"]
    nxt, _h, _r = choose(usable, rs, random.Random(0), None, None)
    assert nxt["id"] == "r0"


def test_choose_never_takes_a_pinned_row_a_filter_refuses():
    rs = rows(2)
    usable = Usable(0, float("inf"), "round_robin", list(rs), list(rs))
    chosen, held, _r = choose(usable, rs, random.Random(0), None, lambda r: r["id"] != "r1", pin="r1")
    assert chosen["id"] == "r0" and held
    chosen, _h, _r = choose(usable, rs, random.Random(0), None, None, hold=lambda allowed: {"r1"}, pin="r1")
    assert chosen["id"] == "r0"
    benched = Usable(0, float("inf"), "round_robin", [rs[0]], list(rs))     # r1 is not usable at all
    chosen, _h, _r = choose(benched, rs, random.Random(0), None, None, pin="r1")
    assert chosen["id"] == "r0"
