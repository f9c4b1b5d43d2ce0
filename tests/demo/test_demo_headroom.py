"""The demo's keys run down and announce it (#21): the fake provider, scripted as the demo
scripts it, says on each answer what is left in the OpenAI or Anthropic dialect, so the
answer that spends a key's last request already says "nothing left until T": the proxy can
rotate before the 429 the next request would get. Fake clock, no sleeps."""

from __future__ import annotations

import pytest

from store.agent.ratelimits import tightest
from store.dialects.registry import read_headers
from tests.demo.fake_calls import Clock, call
from tui.demo import fake_provider as fpv
from tui.demo import launch as demo

T = 1_800_000_000.0
ANNOUNCED = [(key, q) for key, q in demo.provider_script()["quotas"].items() if q.get("dialect")]


def test_the_demo_announces_headroom_on_most_keys_and_keeps_one_reactive():
    dialects = {q["dialect"] for _k, q in ANNOUNCED}
    assert dialects == {"openai", "anthropic", "anthropic-unified"}
    assert {demo.KEYS["or1"], demo.KEYS["or2"]} <= {k for k, _q in ANNOUNCED}
    assert "dialect" not in demo.provider_script()["quotas"][demo.KEYS["cdx1"]]   # the 429 path stays


@pytest.mark.parametrize(("key", "quota"), ANNOUNCED, ids=[q["dialect"] + "-" + k[-4:] for k, q in ANNOUNCED])
def test_each_answer_says_what_is_left_and_the_last_one_says_nothing(key, quota):
    clock = Clock(T)
    with fpv.FakeProvider(clock=clock) as fp:
        fpv.load_script(fp, {"quotas": {key: quota}}, now=T)
        lefts = []
        for _ in range(quota["limit"]):
            status, headers, _ = call(fp.url, key)
            assert status == 200
            r = tightest(read_headers(headers, clock()), clock())
            assert r is not None and r.reset_at is not None and r.reset_at > clock()
            lefts.append(r.left)
            clock.t += 0.5
        assert lefts == sorted(lefts, reverse=True) and lefts[0] > 0
        assert lefts[-1] == 0.0                               # said before any 429
        status, headers, _ = call(fp.url, key)
        assert status == 429                                  # what a reactive client gets next
        assert tightest(read_headers(headers, clock()), clock()).left == 0.0
