"""A headroom bench has one reset time: the same in the proxy's memory, in auth.json and in
a 503's ``Retry-After``.

Every key answers 200 saying nothing is left, reset in ``1s``: the proxy held the keys for
1 s while the bench it wrote to auth.json was floored at 5 s (``policy.BENCH_FLOOR``), so a
503 said ``Retry-After: 1`` and a client that waited that second got another 503
(``Retry-After: 4``); with ``2ms`` the proxy served a key auth.json called exhausted. The
floor is now applied once, to the reading (:func:`store.agent.ratelimits.reopens_at`), and
both take that time. The fake provider and the proxy share a fake clock: no sleeps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.agent.headroom import hold
from store.agent.judge import judge_success
from store.agent.ratelimits import blocked_until, reopens_at
from store.dialects.readings import Reading
from store.paths import Home
from store.pools import policy
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from store.proxy.server import ProxyServer
from tests.conftest import read_doc
from tests.proxy_helpers import OR_KEYS, Running, seed, serving, wait_until
from tui.demo.fake_provider import FakeProvider, Quota

T = 1_800_000_000.0
IDS = ["or0aaa", "or1aaa", "or2aaa"]
MSG = [{"role": "user", "content": "hi"}]


class Clock:
    """The fake clock the fake provider and the proxy share."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@contextmanager
def proxy(home: Home, clock: Clock) -> Iterator[Running]:
    chain = Chain(home, "openrouter", env=None, lock_timeout=5.0, clock=clock)
    with serving(ProxyServer(home, chain, Gate(None), port=0, watch=False, clock=clock)) as running:
        yield running


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="any-client-bearer", max_retries=0, timeout=20)


def served_by(c: openai.OpenAI) -> str:
    raw = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
    assert raw.http_response.status_code == 200
    return raw.headers["x-hermes-credential"]


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0005, 120.0), st.floats(0.0, 1.0), st.floats(0.0, 200.0))
def test_a_reading_with_nothing_left_holds_until_the_floored_reset_whatever_the_clock(window, later, since) -> None:
    """The hold, the verdict's exhausted_until and the bench all name bench_reset(reset, read_at)."""
    read_at = T + since
    r = Reading("requests", "openai", read_at, limit=100, remaining=0, reset_at=read_at + window)
    until = policy.bench_reset(r.reset_at, read_at)
    assert reopens_at(r) == until >= read_at + policy.BENCH_FLOOR
    now = read_at + later * (until - read_at) * 0.999          # any moment before it ends
    h = hold([r], now)
    assert h is not None and h.exhausted and h.until == until
    assert blocked_until([r], now, floored=True) == until
    assert blocked_until([r], read_at) == r.reset_at          # as said (a 429's triage, pacing): not floored
    assert judge_success(read_at, [r]).exhausted_until == until
    assert hold([r], until) is None                          # and it ends then, not later


def test_a_window_with_something_left_is_not_floored() -> None:
    r = Reading("requests", "openai", T, limit=100, remaining=5, reset_at=T + 1)
    assert reopens_at(r) == T + 1 and hold([r], T, threshold=0.1).until == T + 1


def _one_reset(home, window: float) -> None:
    """Three keys answer 200 with nothing left, reset *window* seconds on; then a 503. Memory,
    auth.json and Retry-After say one time, and a client that waits Retry-After is served."""
    clock = Clock(T)
    seed(home, fake := FakeProvider(clock=clock).start())
    try:
        home.config.write_text("model:\n  provider: openrouter\n")      # no fallback
        for key in OR_KEYS:
            fake.quota(key, Quota(limit=1, window=window, dialect="openai"))
        with proxy(home, clock) as p:
            c = sdk(p.url)
            assert sorted(served_by(c) for _ in range(3)) == IDS    # each says: nothing left
            wait_until(lambda: all(r.get("last_status") == "exhausted"
                                   for r in read_doc(home)["credential_pool"]["openrouter"]),
                       what="the headroom benches in auth.json")
            stored = {r["id"]: r["last_error_reset_at"] for r in read_doc(home)["credential_pool"]["openrouter"]}
            p.chain.load()                                         # the view has read the benches too
            with pytest.raises(openai.APIStatusError) as info:
                c.chat.completions.create(model="m", messages=MSG)
            assert info.value.status_code == 503
            err = info.value.body
            retry = int(info.value.response.headers["Retry-After"])
            rows = p.chain._rows["openrouter"]
            memory = {str(r["id"]): p.chain.headroom.exhausted_until("openrouter", r, T, p.chain.env) for r in rows}
            [pool] = err["pools"]
            until = T + max(window, policy.BENCH_FLOOR)
            assert memory == stored == dict.fromkeys(IDS, pytest.approx(until, abs=1e-6)), (memory, stored)
            assert pool["reopens_at"] == pytest.approx(until, abs=1e-6)
            assert retry == max(1, math.ceil(until - T))
            clock.t = T + retry                                    # the client waits what it was told
            assert served_by(c) in IDS
    finally:
        fake.stop()


@pytest.mark.parametrize("window", [1.0, 0.002, 7.5])
def test_memory_store_and_retry_after_name_one_reset(tmp_home, window) -> None:
    _one_reset(tmp_home, window)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 30_000).map(lambda ms: ms / 1000))     # as OpenAI says it: to the millisecond
def test_any_reset_is_one_time_in_memory_in_the_store_and_in_retry_after(tmp_path_factory, window) -> None:
    root = tmp_path_factory.mktemp("home") / "hermes-home"
    root.mkdir(mode=0o700)
    _one_reset(Home(root), window)
