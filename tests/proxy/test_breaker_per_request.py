"""A route's breaker counts failed requests, not failed tries (RELIABILITY 31).

One client request the provider chokes on (a 500 for that body alone) is tried on one key,
then once on another key of the same upstream: two bad answers, but one request's. Counted
as two strikes they opened the breaker, and the next ordinary request got a 503 while every
key was healthy. A request now strikes once however many keys it tries; distinct requests
failing in a row still open the breaker.
"""

from __future__ import annotations

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.proxy.routing import upstreams
from store.proxy.routing.upstreams import STRIKES, Breakers
from tests.proxy.upstream import Behaviour, ScriptedUpstream, http
from tests.proxy_helpers import edge_seed, running_chain_proxy

BASE = "https://openrouter.ai/api/v1"
T0 = 1_800_000_000.0
POISON = "BOOM500"


def test_one_request_failing_on_every_key_is_one_strike() -> None:
    b = Breakers()
    for _key in range(3):                       # the same request on or0, or1, or2
        b.failed(BASE, T0, answered=True, what="500", request="r-1")
    assert not b.blocked(BASE, T0)
    [u] = b.snapshot(T0)
    assert u["strikes"] == 1 and u["state"] == "closed"
    b.failed(BASE, T0 + 0.1, answered=True, what="500", request="r-2")   # another request: the second
    assert b.blocked(BASE, T0 + 0.1)


def test_no_answer_still_opens_at_once_even_on_a_retry() -> None:
    b = Breakers()
    b.failed(BASE, T0, answered=True, what="500", request="r-1")
    b.failed(BASE, T0, answered=False, what="connect", request="r-1")    # no answer: another key cannot help
    assert b.blocked(BASE, T0)


# Each request: (poisoned, tries on the upstream). A good one is answered 200 on its one try.
requests_ = st.lists(st.tuples(st.booleans(), st.integers(1, 3)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(requests_, st.randoms(use_true_random=False))
def test_the_breaker_opens_exactly_when_distinct_requests_keep_failing(reqs, rnd) -> None:
    """Any interleaving of the tries of good and poisoned requests (concurrent requests): the
    breaker is open exactly when STRIKES distinct requests failed since the last success."""
    tries = [(f"r-{i}", poisoned) for i, (poisoned, n) in enumerate(reqs) for _ in range(n if poisoned else 1)]
    rnd.shuffle(tries)
    b, failed_since = Breakers(), set()
    for rid, poisoned in tries:
        if b.blocked(BASE, T0):
            assert len(failed_since) >= STRIKES
            continue                            # nothing is sent while it is open (the clock stands still)
        if poisoned:
            b.failed(BASE, T0, answered=True, what="500", request=rid)
            failed_since.add(rid)
        else:
            b.succeeded(BASE)
            failed_since.clear()
        assert b.blocked(BASE, T0) == (len(failed_since) >= STRIKES)


class PoisonedBody(ScriptedUpstream):
    """Answers 500 to any request whose body carries :data:`POISON`, 200 to every other (the
    request is recorded in ``seen`` just before its answer is chosen, with no await between)."""

    def _next(self, key: str | None) -> Behaviour:
        with self._lock:
            body = self.seen[-1].body
        if POISON.encode() in body:
            return http(500, {}, {"error": {"message": "Internal Server Error", "type": "server_error"}})
        return http(200)


@pytest.fixture
def poisoned_proxy(tmp_home, monkeypatch):
    monkeypatch.setattr(upstreams, "FIRST_OPEN", 60.0)    # once open, open for the whole test
    with PoisonedBody() as up:
        edge_seed(tmp_home, up.url, keys=3, fallback=False)
        with running_chain_proxy(tmp_home) as p:
            yield p, up


def _ask(client: openai.OpenAI, text: str) -> int:
    try:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        return 200
    except openai.APIStatusError as exc:
        return exc.status_code


def test_one_poisoned_request_does_not_shut_the_route_for_good_clients(poisoned_proxy) -> None:
    p, up = poisoned_proxy
    client = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    assert _ask(client, "hello") == 200
    assert _ask(client, POISON) == 500                   # the provider's answer, tried on more than one key
    assert sum(1 for s in up.seen if POISON.encode() in s.body) >= 2
    p.settled()
    assert _ask(client, "hello") == 200, "one request's two bad answers opened the breaker"
    p.settled()
    for _ in range(3):                                   # the repro's pattern: 1 poisoned, then good ones
        assert _ask(client, POISON) == 500
        p.settled()
        assert [_ask(client, "hello") for _ in range(3)] == [200, 200, 200]
        p.settled()


def test_distinct_requests_failing_in_a_row_still_open_it(poisoned_proxy) -> None:
    p, _up = poisoned_proxy
    client = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    assert [_ask(client, POISON) for _ in range(STRIKES)] == [500] * STRIKES
    p.settled()
    assert _ask(client, "hello") == 503                   # the upstream failed two requests in a row


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.booleans(), min_size=1, max_size=10))
def test_a_good_request_gets_a_503_only_after_distinct_requests_failed_in_a_row(poisoned_proxy, order) -> None:
    """Any order of good (False) and poisoned (True) requests through the proxy: a good request
    is served while its keys are healthy, unless STRIKES distinct requests failed in a row."""
    p, _up = poisoned_proxy
    p.call(_clear(p))                                    # each example starts with the breaker closed
    client = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    in_a_row, open_ = 0, False
    for poisoned in order:
        got = _ask(client, POISON if poisoned else "hello")
        p.settled()
        if open_:
            assert got == 503
        elif poisoned:
            assert got == 500
            in_a_row += 1
            open_ = in_a_row >= STRIKES
        else:
            assert got == 200, f"a good request refused after {in_a_row} failed request(s) in a row"
            in_a_row = 0


async def _clear(p) -> None:
    p.chain.breakers._by_base.clear()
