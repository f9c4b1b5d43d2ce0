"""The client gets its bytes before the proxy's bookkeeping (issue 27, the latency goal):
a success's verdict (breaker, pin, counters, usage feed) runs after the answer is written
for a body read whole, and after the first write for a stream; exactly once per answer,
and before the next request is handled. Negative control: a relay that judges at once
(the verdict before the bytes) is caught by the same order check."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from aiohttp import web

from store.proxy.edge import relay
from store.proxy.forward import Forwarder
from tests.proxy.upstream import ScriptedUpstream, http, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _chunk(text: str) -> bytes:
    return b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}).encode() + b"\n\n"


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def events(monkeypatch) -> list[str]:
    """What happened, in order, on the proxy's loop: ``written`` (an answer's body, or a
    stream's first chunk, went to the client's socket) and ``served`` (a success judged)."""
    seen: list[str] = []
    lock = threading.Lock()

    def note(what: str) -> None:
        with lock:
            seen.append(what)

    served, body_eof, stream_write = Forwarder._served, web.Response.write_eof, web.StreamResponse.write

    def judged(self, attempt, base, body=None):
        note("served")
        return served(self, attempt, base, body)

    async def eof(self, data: bytes = b"") -> None:
        await body_eof(self, data)
        note("written")

    async def write(self, data) -> None:
        await stream_write(self, data)
        if not getattr(self, "_noted", False):
            self._noted = True
            note("written")

    monkeypatch.setattr(Forwarder, "_served", judged)
    monkeypatch.setattr(web.Response, "write_eof", eof)
    monkeypatch.setattr(web.StreamResponse, "write", write)
    return seen


def _two_answers(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    up.script(EDGE_KEYS[0], http(200), stream([_chunk("hel"), _chunk("lo"), b"data: [DONE]\n\n"]), http(200))
    with running_chain_proxy(tmp_home) as p, httpx.Client(timeout=30) as c:
        assert c.post(p.url + "/chat/completions", json=MSG).status_code == 200
        with c.stream("POST", p.url + "/chat/completions", json={**MSG, "stream": True}) as r:
            assert b"[DONE]" in r.read()
        assert c.post(p.url + "/chat/completions", json=MSG).status_code == 200
        p.settled()
        assert p.server.status()["pool_totals"]["openrouter"]["requests"] == 3


def test_each_answer_is_written_before_it_is_judged_and_judged_once(tmp_home, up, events) -> None:
    _two_answers(tmp_home, up)
    # A body, a stream, a body: each written, then judged once, before the next request.
    assert events == ["written", "served"] * 3


def test_control_a_relay_that_judges_at_once_is_caught(tmp_home, up, events, monkeypatch) -> None:
    monkeypatch.setattr(relay, "after_write", lambda fn, *args: fn(*args))     # the verdict before the bytes
    _two_answers(tmp_home, up)
    with pytest.raises(AssertionError):
        assert events == ["written", "served"] * 3
