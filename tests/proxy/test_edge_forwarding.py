"""Faithful forwarding (RELIABILITY 41): no redirect followed, the raw query byte for byte,
the body as it came with its Content-Encoding (or a clear 415), only hop-by-hop headers
dropped. Each has a control: the old way (or aiohttp's default) and the test catches it."""

from __future__ import annotations

import gzip
import json

import aiohttp
import httpx
import pytest
from aiohttp import web

from store.proxy import forward
from store.proxy.server import ProxyServer
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, EDGE_NOUS, edge_seed, running_chain_proxy

pytestmark = pytest.mark.slow
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "the prompt, secret-ish"}]}).encode()


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def elsewhere():
    with ScriptedUpstream() as u:
        yield u


def _post(p, path: str = "/chat/completions", **kw) -> httpx.Response:
    kw.setdefault("content", BODY)
    return httpx.post(p.url + path, timeout=30, **kw)


def _redirect_home(tmp_home, up, elsewhere) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    up.script(EDGE_KEYS[0], http(307, {"Location": elsewhere.url + "/api/v1/chat/completions"}, b""))


def test_a_redirect_goes_back_to_the_client_and_the_other_origin_gets_nothing(tmp_home, up, elsewhere) -> None:
    _redirect_home(tmp_home, up, elsewhere)
    with running_chain_proxy(tmp_home) as p:
        r = _post(p, headers={"api-key": "client-side-header"})
    assert r.status_code == 307 and r.headers["location"] == elsewhere.url + "/api/v1/chat/completions"
    assert elsewhere.seen == []            # never the prompt, never the key


def test_control_a_session_that_follows_redirects_reposts_the_prompt(tmp_home, up, elsewhere, monkeypatch) -> None:
    real = aiohttp.ClientSession.request

    def follows(self, method, url, **kw):
        kw["allow_redirects"] = True
        return real(self, method, url, **kw)

    monkeypatch.setattr(aiohttp.ClientSession, "request", follows)
    _redirect_home(tmp_home, up, elsewhere)
    with running_chain_proxy(tmp_home) as p:
        _post(p, headers={"api-key": "client-side-header"})
    assert elsewhere.seen and elsewhere.seen[0].body == BODY


QUERY = "?a=%23frag&b=%2Fx%20y&c=%E2%9C%93&d=&e"


def test_the_raw_query_goes_on_byte_for_byte(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        assert _post(p, "/chat/completions" + QUERY).status_code == 200
    assert up.seen[0].target == "/api/v1/chat/completions" + QUERY


def test_control_the_decoded_query_loses_the_fragment(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(forward, "raw_query", lambda request: "?" + request.query_string if request.query_string
                        else "")
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        _post(p, "/chat/completions" + QUERY)
    assert up.seen[0].target != "/api/v1/chat/completions" + QUERY


GZIPPED = gzip.compress(BODY, mtime=0)


def test_an_encoded_body_goes_on_as_it_came(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = _post(p, content=GZIPPED, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert r.status_code == 200
    assert up.seen[0].body == GZIPPED and up.seen[0].header("content-encoding") == ["gzip"]


def test_control_a_server_that_decodes_bodies_cannot_forward_them_as_they_came(tmp_home, up, monkeypatch) -> None:
    """With aiohttp's default server (it decodes request bodies), the door sees JSON labelled
    gzip: refused (400), nothing forwarded, where the proxy's own server forwards it whole."""
    monkeypatch.setattr(ProxyServer, "app", lambda self: web.Server(self.handle, access_log=None))
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = _post(p, content=GZIPPED, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert r.status_code == 400 and up.seen == []


def test_a_fallback_that_must_set_the_model_refuses_an_encoded_body_with_415(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, keys=1)
    up.script(EDGE_KEYS[0], http(402, {}, {"error": {"message": "Insufficient credits"}}))
    with running_chain_proxy(tmp_home) as p:
        r = _post(p, content=GZIPPED, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    err = r.json()["error"]
    assert r.status_code == 415 and err["type"] == "unsupported_content_encoding" and "without Content-Encoding" in \
        err["message"]
    assert up.hits(EDGE_NOUS) == 0


def test_an_encoded_answer_comes_back_decoded(tmp_home, up) -> None:
    """A gzip success is relayed decoded (so it is checked for the row's key), without its
    Content-Encoding (tests/proxy/test_encoded_answers.py has the rest)."""
    packed = gzip.compress(b'{"id": "x", "choices": []}', mtime=0)
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    up.script(EDGE_KEYS[0], http(200, {"Content-Encoding": "gzip"}, packed))
    with running_chain_proxy(tmp_home) as p, \
            httpx.stream("POST", p.url + "/chat/completions", content=BODY, timeout=30) as r:
        got = b"".join(r.iter_raw())
    assert got == b'{"id": "x", "choices": []}' and "content-encoding" not in r.headers


REQUEST_HEADERS = [("Connection", "keep-alive, X-Hop-Named"), ("X-Hop-Named", "hop"), ("Keep-Alive", "timeout=5"),
                   ("TE", "trailers"), ("Proxy-Authorization", "Basic cHJveHk6cHc="), ("X-Multi", "one"),
                   ("X-Multi", "two"), ("X-Custom", "kept"), ("Content-Type", "application/json")]
ANSWER_HEADERS = [("X-Up", "1"), ("X-Up-Multi", "a"), ("X-Up-Multi", "b"), ("Connection", "X-Up-Hop"),
                  ("X-Up-Hop", "h"), ("Keep-Alive", "timeout=1")]


def _hop_by_hop(tmp_home, up) -> tuple[httpx.Response, object]:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    up.script(EDGE_KEYS[0], http(200, ANSWER_HEADERS))
    with running_chain_proxy(tmp_home) as p:
        r = _post(p, headers=REQUEST_HEADERS)
    return r, up.seen[0]


def test_only_hop_by_hop_headers_are_dropped_both_ways(tmp_home, up) -> None:
    r, seen = _hop_by_hop(tmp_home, up)
    assert seen.header("x-multi") == ["one", "two"] and seen.header("x-custom") == ["kept"]
    for gone in ("x-hop-named", "keep-alive", "te", "proxy-authorization"):
        assert seen.header(gone) == [], gone
    assert seen.header("authorization") == [f"Bearer {EDGE_KEYS[0]}"]
    assert r.headers.get_list("x-up-multi") == ["a", "b"] and r.headers["x-up"] == "1"
    assert "x-up-hop" not in r.headers


def test_control_a_dict_of_headers_loses_repeated_ones(tmp_home, up, monkeypatch) -> None:
    real = forward.kept
    monkeypatch.setattr(forward, "kept", lambda headers, drop: type(real(headers, drop))(
        dict(real(headers, drop))))
    _r, seen = _hop_by_hop(tmp_home, up)
    assert seen.header("x-multi") != ["one", "two"]
