"""Whose fault is it: the outcome table, row by row, then each row through a running proxy
(RELIABILITY 31-33), plus generated outcomes.

The key's fault benches the row, and the client is served by another key. The route's
fault benches nothing and writes nothing: another key is tried once where that can help,
then the next route, and the chain stays on its primary. The request's fault reaches the
client as the provider answered, and no other key is tried. The controls replace the
classifier with the old rule (every 5xx, 403 and transport failure blamed on the key) and
show the tests catch it.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.agent import judge as judge_mod
from store.agent import outcomes
from store.agent.outcomes import KEY, REQUEST, ROUTE, Result, Verdict, classify
from store.paths import Home
from store.proxy import server
from store.proxy.routing import upstreams
from tests.proxy.outcome_table import TABLE, Case
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, EDGE_NOUS, edge_seed, running_chain_proxy, status_fields

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_the_table_row_by_row(case: Case) -> None:
    verdict = classify(case.result(), "openrouter")
    assert (verdict.fault, verdict.kind) == (case.fault, case.kind)
    assert (verdict.failure_reason is not None) == (case.fault == KEY)


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def quick_upstream(monkeypatch):
    """A stalled upstream costs the test one second, not the proxy's ten minutes."""
    import aiohttp
    monkeypatch.setattr(server, "UPSTREAM_TIMEOUT", aiohttp.ClientTimeout(total=None, sock_connect=2, sock_read=1))


_HELD: list[socket.socket] = []


def _dead_port() -> int:
    """A port that refuses connections for the rest of the module: bound and not listening,
    so no other test's server (the other worker's) can take it meanwhile. A port closed again
    once chosen was once taken by another test's proxy, which answered 404."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return s.getsockname()[1]


@pytest.fixture(scope="module", autouse=True)
def _release_dead_ports():
    yield
    while _HELD:
        _HELD.pop().close()


@pytest.fixture(scope="module")
def not_tls():
    """A port that answers a TLS handshake with plain text: the handshake fails at once."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
                conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    srv.close()


def _arrange(home: Home, up: ScriptedUpstream, case: Case, tls_port: int = 0) -> None:
    edge_seed(home, up.url)
    if case.transport is not None:
        # Key 0 alone on an upstream that cannot be reached (a closed port, or TLS to plain text).
        base = f"http://127.0.0.1:{_dead_port()}" if case.transport == "connect" else f"https://127.0.0.1:{tls_port}"
        doc = json.loads(home.auth.read_text())
        doc["credential_pool"]["openrouter"][0]["base_url"] = base + "/api/v1"
        home.auth.write_text(json.dumps(doc))
    else:
        up.script(EDGE_KEYS[0], case.answer)
    up.script(EDGE_KEYS[1], http(200))
    up.script(EDGE_NOUS, http(200))


def _through_proxy(home: Home, up: ScriptedUpstream, case: Case,
                   tls_port: int = 0) -> tuple[httpx.Response, dict, dict, object]:
    _arrange(home, up, case, tls_port)
    before = status_fields(home)
    with running_chain_proxy(home) as p:
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        p.settled()
        active = p.chain.runtime.active
        breakers = p.chain.breakers.snapshot(p.chain.clock())
    return r, before, status_fields(home), (active, breakers)


@pytest.mark.parametrize("case", TABLE, ids=[c.name for c in TABLE])
def test_each_row_through_the_proxy(tmp_home, up, quick_upstream, not_tls, case: Case) -> None:
    r, before, after, (active, breakers) = _through_proxy(tmp_home, up, case, not_tls)
    changed = {rid for rid in after if after[rid] != before[rid]}
    if case.fault == KEY:
        assert changed == {"or0edg"}, "the key's fault benches exactly its row"
        assert after["or0edg"]["last_status"] in ("exhausted", "dead")
        assert r.status_code == 200 and r.headers["x-hermes-credential"] == "or1edg"
    elif case.fault == ROUTE:
        assert changed == set(), "the route's fault writes nothing to auth.json"
        assert r.status_code == 200, r.text
        assert active == 0, "a failing upstream is not a fallback: the chain stays on its primary"
        if r.headers["x-hermes-pool"] == "nous":
            # No answer opens the failing upstream's breaker at once; a bad answer is a strike.
            assert breakers and (breakers[0]["state"] == "open" or breakers[0]["strikes"] == 1)
        else:      # another key on the same upstream answered: its breaker closed again
            assert r.headers["x-hermes-credential"] == "or1edg" and case.kind != "upstream_rate_limit"
        if case.kind in ("upstream_rate_limit", "upstream_blocked"):
            assert up.hits(EDGE_KEYS[1]) == 0 and r.headers["x-hermes-pool"] == "nous"   # another key cannot help
    else:
        assert changed == set()
        assert r.status_code == case.answer.status
        assert r.json() == json.loads(case.answer.body), "the client gets the provider's own answer"
        assert up.hits(EDGE_KEYS[1]) == 0 and up.hits(EDGE_NOUS) == 0, "no other key is tried"
        assert r.headers["x-hermes-request-id"]


def _old_rule(result: Result, pool: str | None = None) -> Verdict:
    """The rule before: every 5xx, 401/403 and transport failure was the key's."""
    code = 502 if result.transport else result.status
    if code in (401, 403, 402, 429) or code >= 500:
        return Verdict(KEY, "old", "server_error" if code >= 500 else "auth")
    return Verdict(REQUEST, "old")


@pytest.mark.parametrize("name", ["503 unavailable", "connection reset", "403 moderation refusal (OpenRouter)"])
def test_control_the_old_rule_benches_keys_for_routes_and_requests(tmp_home, up, quick_upstream, monkeypatch,
                                                                   name) -> None:
    monkeypatch.setattr(judge_mod, "classify", _old_rule)     # the one judgement of an answer
    case = next(c for c in TABLE if c.name == name)
    _r, before, after, _ = _through_proxy(tmp_home, up, case)
    assert after["or0edg"] != before["or0edg"], "without the classification the key was not benched?"


def test_a_route_failure_on_every_route_is_one_answer_and_no_bench(tmp_home, up, quick_upstream,
                                                                   monkeypatch) -> None:
    monkeypatch.setattr(upstreams, "FIRST_OPEN", 60.0)     # open for the whole test, however slow the machine
    edge_seed(tmp_home, up.url)
    for key in (*EDGE_KEYS[:2], EDGE_NOUS):
        up.script(key, http(503, {}, {"error": {"message": "down for maintenance", "type": "overloaded"}}))
    before = status_fields(tmp_home)
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        p.settled()
        one = {b["upstream"]: b for b in p.chain.breakers.snapshot(p.chain.clock())}
        r2 = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        p.settled()
        snapshot = {b["upstream"]: b for b in p.chain.breakers.snapshot(p.chain.clock())}
        sent = up.hits(EDGE_KEYS[0]) + up.hits(EDGE_KEYS[1]) + up.hits(EDGE_NOUS)
        again = [httpx.post(p.url + "/chat/completions", json=MSG, timeout=30) for _ in range(2)]
    assert r.status_code == 503 and r.json()["error"]["message"] == "down for maintenance"
    assert r2.status_code == 503 and r2.json()["error"]["message"] == "down for maintenance"
    # One request failing on both keys is one strike: one request never opens a breaker alone.
    assert one[up.url + "/api/v1"]["state"] == "closed" and one[up.url + "/api/v1"]["strikes"] == 1
    assert snapshot[up.url + "/api/v1"]["state"] == "open"      # two requests failed in a row
    assert snapshot[up.url + "/nous/v1"]["state"] == "open"
    assert status_fields(tmp_home) == before
    # While the breakers are open nothing is sent there: the client is told when to come back.
    assert up.hits(EDGE_KEYS[0]) + up.hits(EDGE_KEYS[1]) + up.hits(EDGE_NOUS) == sent
    last = again[-1].json()["error"]
    # The real reason (#27): every upstream is failing, no key is cooling.
    assert last["type"] == "upstream_unavailable" and int(again[-1].headers["retry-after"]) >= 1
    assert "cooling" not in last["message"] and "circuit breaker open" in last["message"]
    assert {p["pool"] for p in last["pools"]} == {"openrouter", "nous"}


# --- generated outcomes ------------------------------------------------------------------

statuses = st.one_of(st.integers(100, 999), st.sampled_from([400, 401, 402, 403, 404, 408, 413, 429, 500, 502,
                                                              503, 504, 529]))
texts = st.one_of(st.text(max_size=200), st.sampled_from(
    ["Provider returned error", "overloaded", "rate limit", "insufficient credits", "your input was flagged",
     "unsupported parameter", "key limit exceeded", "<html>", "content_filter", "model not found"]))


@settings(max_examples=300, deadline=None)
@given(statuses, texts, st.one_of(st.none(), st.dictionaries(st.text(max_size=12), st.text(max_size=30),
                                                             max_size=3)),
       st.booleans(), st.sampled_from([None, "openrouter", "nous"]))
def test_any_outcome_has_exactly_one_fault_and_5xx_or_no_answer_is_never_the_keys(
        status, text, metadata, structured, pool) -> None:
    body = json.dumps({"error": {"message": text, "metadata": metadata}}).encode() if structured else text.encode()
    verdict = classify(outcomes.Result(status, {}, None, text, metadata=metadata, text=body.decode(),
                                       structured=structured), pool)
    assert verdict.fault in (KEY, ROUTE, REQUEST) or (verdict.fault is None and 200 <= status < 400)
    if status >= 500:
        assert verdict.fault != KEY, "a 5xx is never the key's fault"
    assert (verdict.failure_reason is not None) == (verdict.fault == KEY)
    transport = classify(outcomes.Result.failed_transport(outcomes.RESET, text), pool)
    assert transport.fault == ROUTE


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["Retry-After", "x-ratelimit-reset", "x-ratelimit-reset-requests",
                                         "x-ratelimit-reset-tokens"]),
                       st.one_of(st.text(max_size=40), st.sampled_from(
                           ["1e290", "nan", "inf", "-inf", "-5", "0", "9" * 400, "1e308", "Infinity",
                            "Wed, 21 Oct 9999 07:28:00 GMT", "6m0s", "99999999h", "1e20ms"]),
                           st.floats().map(repr))),
       st.one_of(st.none(), st.floats(), st.text(max_size=30), st.integers()),
       st.text(max_size=80))
def test_a_reset_time_from_outside_is_none_or_a_sane_time(headers, reset_at, message) -> None:
    now = 1_800_000_000.0
    t = outcomes.reset_time(Result(429, headers, None, message, reset_at), now)
    assert t is None or (math.isfinite(t) and 946_684_800 <= t <= now + 366 * 86400 + 1)
