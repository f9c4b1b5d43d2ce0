"""Before any "no key" answer the proxy looks again (#27): a route earlier in the chain
whose benches have ended serves, not only once the restore timer comes round.

The reported answer: after a fallback whose keys all failed, a 503 "every credential is
cooling" while the primary's keys were usable again (the same request a second later got
a 200). Shown with the real ``openai`` SDK, then as a property over scripted upstreams and
request streams: no client gets a 503/429 while any route has a usable key at the time of
the answer. The negative control is the timer-only restore (no look again)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import openai
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.pools import policy
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from store.proxy.routing.eligibility import Ask
from store.proxy.server import ProxyServer
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, EDGE_NOUS, edge_seed, serving

pytestmark = pytest.mark.slow

T = 1_800_000_000.0
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
KEYS = (EDGE_KEYS[0], EDGE_KEYS[1], EDGE_NOUS)


def limited(after: int) -> object:
    return http(429, {"retry-after": str(after)}, {"error": {"message": "Rate limit reached.",
                                                             "code": "rate_limit_exceeded"}})


OK = http(200)
DOWN = http(500, {}, {"error": {"message": "internal error", "type": "server_error"}})


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


class Clock:
    def __init__(self) -> None:
        self.t = T

    def __call__(self) -> float:
        return self.t


def proxy(home: Home, clock: Clock):
    """A proxy on *home* with a clock the test moves; the restore gate's timer never comes
    round (what is under test is the look before an answer, not the timer)."""
    chain = Chain(home, "openrouter", env=None, clock=clock, lock_timeout=5.0)
    chain.restore_due = lambda: False       # type: ignore[method-assign]
    return serving(ProxyServer(home, chain, Gate(None), port=0, watch=False))


def any_usable(chain: Chain, now: float) -> bool:
    """The oracle: some row of some route may serve now (benches ended, upstream not behind
    an open breaker, no headroom hold), read off the view independently of selection."""
    for route in chain.routes:
        rows = chain._rows.get(route.pool or "") or []
        for row in rows:
            if policy.effective(row, rows, now, chain._ttls).usable and \
                    chain.eligibility.check(Ask(route.pool or "", rows, now, route.base_url), row) is None:
                return True
    return False


def test_after_the_fallback_fails_the_primary_that_is_usable_again_serves(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url)
    for key in EDGE_KEYS[:2]:
        up.script(key, limited(30), limited(30), OK)        # benched 30 s, then fine
    up.script(EDGE_NOUS, limited(300))                      # the fallback: benched 5 minutes
    clock = Clock()
    with proxy(tmp_home, clock) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        with pytest.raises(openai.APIStatusError) as first:
            c.chat.completions.create(**MSG)
        assert first.value.status_code == 503              # nothing usable anywhere: right
        clock.t = T + 31                                    # the primary's benches are over
        got = c.chat.completions.with_raw_response.create(**MSG)
    assert got.http_response.status_code == 200 and got.headers["x-hermes-pool"] == "openrouter"


def test_control_timer_only_restore_answers_503_while_the_primary_is_usable(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(Chain, "look_again", lambda self, avoid=None, want=None: None)
    edge_seed(tmp_home, up.url)
    for key in EDGE_KEYS[:2]:
        up.script(key, limited(30), limited(30), OK)
    up.script(EDGE_NOUS, limited(300))
    clock = Clock()
    with proxy(tmp_home, clock) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        with pytest.raises(openai.APIStatusError):
            c.chat.completions.create(**MSG)
        clock.t = T + 31
        with pytest.raises(openai.APIStatusError) as second:
            c.chat.completions.create(**MSG)
        assert second.value.status_code == 503 and any_usable(p.chain, clock.t)    # caught


# --- the property ----------------------------------------------------------------------------------

BEHAVIOUR = st.one_of(st.just(OK), st.just(DOWN), st.integers(1, 120).map(limited))
SCRIPT = st.lists(BEHAVIOUR, min_size=1, max_size=4)
STREAM = st.lists(st.integers(0, 150), min_size=1, max_size=5)     # seconds between requests
BUG = ([limited(30), limited(30), OK], [limited(30), limited(30), OK], [limited(300)], [0, 31])


def run_scripts(up: ScriptedUpstream, scripts: list, stream: list[int]) -> None:
    up.reset_script()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hermes-home"
        root.mkdir(mode=0o700)
        home = Home(root)
        edge_seed(home, up.url)
        for key, script in zip(KEYS, scripts, strict=True):
            up.script(key, *script)
        clock = Clock()
        with proxy(home, clock) as p:
            for dt in stream:
                clock.t += dt
                r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
                if r.status_code in (429, 503):
                    assert not any_usable(p.chain, clock.t), \
                        f"HTTP {r.status_code} at t+{clock.t - T:g} while a key was usable: {r.text[:300]}"


PROPERTY = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@PROPERTY
@example(*BUG)
@given(SCRIPT, SCRIPT, SCRIPT, STREAM)
def test_no_503_or_429_while_any_route_has_a_usable_key(up, or0, or1, nous, stream) -> None:
    run_scripts(up, [or0, or1, nous], stream)


def test_control_the_property_fails_with_the_timer_only_restore(up, monkeypatch) -> None:
    monkeypatch.setattr(Chain, "look_again", lambda self, avoid=None, want=None: None)

    @settings(max_examples=1, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @example(*BUG)
    @given(SCRIPT, SCRIPT, SCRIPT, STREAM)
    def prop(or0, or1, nous, stream) -> None:
        run_scripts(up, [or0, or1, nous], stream)

    with pytest.raises(AssertionError, match="while a key was usable"):
        prop()
