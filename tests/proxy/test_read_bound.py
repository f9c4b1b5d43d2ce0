"""The upstream's read bound (``sock_read``): an answer whose body goes silent midway ends
within a tick of the bound, as aiohttp's own read timeout would end it. The proxy keeps the
bound once a second over the bodies being read (``store.proxy.edge.upstream.Reads``), not with
aiohttp's timer cancelled and re-armed on every read; the control takes that check out and
the silent body is never let go."""

from __future__ import annotations

import aiohttp
import httpx
import openai
import pytest

from store.proxy import server
from store.proxy.edge.upstream import Reads
from tests.proxy.upstream import ScriptedUpstream, chat_delta, cut, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow
KEY = EDGE_KEYS[0]
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def bound(monkeypatch):
    """A read bound of one second, not the proxy's ten minutes."""
    monkeypatch.setattr(server, "UPSTREAM_TIMEOUT", aiohttp.ClientTimeout(total=None, sock_connect=2, sock_read=1))



def _released(p, up) -> bool:
    return up.hung_up == 1 and p.server.stats.in_flight_total() == 0 and not p.chain.headroom._flying


def test_a_stream_silent_midway_ends_with_the_proxys_error_and_lets_the_upstream_go(tmp_home, up, bound) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream([chat_delta("hel")], then="hang"))
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        got = []
        with pytest.raises(openai.APIError) as err:
            for ch in c.chat.completions.create(model="m", messages=MSG, stream=True):
                got.append(ch.choices[0].delta.content)
        wait_until(lambda: _released(p, up), timeout=10, what="the silent upstream let go")
        assert p.server.stats.stream_failures == 1
        assert not p.server.forwarder.reads.live           # nothing left watched
    assert got == ["hel"] and "upstream stream broke" in str(err.value)
    assert not isinstance(err.value, openai.APITimeoutError)   # the proxy ended it, not the client


def test_a_body_silent_midway_is_the_routes_failure_and_says_so(tmp_home, up, bound) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, cut(200, sent=10, hang=True))            # 10 bytes of the body, then nothing
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": MSG}, timeout=30)
        wait_until(lambda: _released(p, up), timeout=10, what="the silent upstream let go")
    err = r.json()["error"]
    assert r.status_code == 504 and err["type"] == "upstream_unreachable"
    assert "HTTP 200, then timeout before the body ended" in err["message"] and "no key was benched" in err["message"]
    assert up.hits(KEY) == 1


def test_control_without_the_check_a_silent_stream_is_never_let_go(tmp_home, up, bound, monkeypatch) -> None:
    monkeypatch.setattr(Reads, "cut", lambda self, now: 0)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream([chat_delta("hel")], then="hang"))
    with running_chain_proxy(tmp_home, drain_timeout=0.5) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=4)
        with pytest.raises((openai.APITimeoutError, httpx.ReadTimeout)):   # the client gave up, not the proxy
            for _ch in c.chat.completions.create(model="m", messages=MSG, stream=True):
                pass
        assert p.server.stats.stream_failures == 0
