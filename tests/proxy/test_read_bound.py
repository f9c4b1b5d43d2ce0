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


class _Content:
    def __init__(self, total: int = 0, eof: bool = False) -> None:
        self.total_bytes, self.eof, self.raised = total, eof, None

    def at_eof(self) -> bool:
        return self.eof

    def set_exception(self, exc: BaseException) -> None:
        self.raised = exc


class _Answer:
    def __init__(self, content: object) -> None:
        self.content, self.connection = content, None


def test_the_bound_counts_from_the_last_byte_and_ends_a_silent_body_once() -> None:
    reads, body = Reads(10.0), _Content()
    up = _Answer(body)
    reads.live[up] = (0.0, 0)
    body.total_bytes = 5
    assert reads.cut(9.0) == 0 and reads.live[up] == (9.0, 5)      # a byte came: counted from now
    assert reads.cut(18.9) == 0 and body.raised is None             # 9.9 s silent: within the bound
    assert reads.cut(19.0) == 1 and isinstance(body.raised, aiohttp.ServerTimeoutError)
    assert up not in reads.live and reads.cut(100.0) == 0           # ended once, no longer watched


def test_a_body_received_whole_is_never_cut_and_an_odd_answer_never_stops_the_tick() -> None:
    reads, whole = Reads(1.0), _Content(total=7, eof=True)
    done, odd = _Answer(whole), _Answer(None)                        # None: .content.total_bytes raises
    reads.live[done], reads.live[odd] = (0.0, 7), (0.0, 0)
    assert reads.cut(1000.0) == 0 and whole.raised is None           # a slow client holds it: not the upstream's fault
    assert done in reads.live and odd not in reads.live
