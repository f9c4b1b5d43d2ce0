"""Every failure is an answer, a bench has a floor, numbers from outside are checked
(RELIABILITY 33, 34, 43).

A provider's ``Retry-After: 0`` or a reset time already past benches for at least the floor,
and the row just benched is not picked again for the same request: another usable key
serves it. ``Retry-After: 1e290`` never reaches auth.json. A held lock or an unreadable
store while recording a bench never stops another key from serving; a cut 2xx, a row id
with CR/LF and an exception in our own code all end in an OpenAI-shaped JSON answer with
a request id that the log carries too. Each has a control without its mechanism.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time

import httpx
import pytest

from store import outside
from store.agent.pool_client import PoolClient
from store.model import parse_epoch
from store.pools import policy
from store.proxy import forward
from store.proxy.edge import answers
from store.proxy.offloop import run_blocking
from store.proxy.routing import chain as chain_mod
from store.proxy.routing.chain import Chain
from store.proxy.server import ProxyServer
from tests.proxy.upstream import ScriptedUpstream, cut, http
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, status_fields, strict_json

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
YEAR = 366 * 86400


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def proxy_log(caplog):
    caplog.set_level(logging.INFO, logger="hermes_admin.proxy")
    return caplog


def post(p, **kw) -> httpx.Response:
    return httpx.post(p.url + "/chat/completions", json=MSG, timeout=30, **kw)


def _429(headers: dict[str, str]) -> object:
    return http(429, headers, {"error": {"message": "Rate limit reached.", "code": "rate_limit_exceeded"}})


# --- the floor, and outside numbers -------------------------------------------------------

RESETS = {
    "Retry-After: 0": {"Retry-After": "0"},
    "a reset already past": {"x-ratelimit-reset": str(int(time.time()) - 100)},
    "Retry-After: soon": {"Retry-After": "soon"},
    "Retry-After: 1e290": {"Retry-After": "1e290"},
    "Retry-After: nan": {"Retry-After": "nan"},
    "x-ratelimit-reset: 1e300": {"x-ratelimit-reset": "1e300"},
    "Retry-After: -1": {"Retry-After": "-1"},
}


@pytest.mark.parametrize("name", list(RESETS))
def test_a_bench_has_a_floor_and_another_key_serves_the_same_request(tmp_home, up, name) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], _429(RESETS[name]))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home) as p:
        first = post(p)
        second = post(p)
    assert first.status_code == 200 and first.headers["x-hermes-credential"] == "or1edg"
    assert second.status_code == 200 and second.headers["x-hermes-credential"] == "or1edg"
    assert up.hits(EDGE_KEYS[0]) == 2           # the 429 and its one retry, never again
    row = strict_json(tmp_home.auth.read_bytes())["credential_pool"]["openrouter"][0]
    at, reset = row["last_status_at"], row["last_error_reset_at"]
    assert row["last_status"] == "exhausted"
    assert reset is None or at + policy.BENCH_FLOOR <= reset <= at + YEAR, reset


def test_control_without_the_floor_the_next_request_goes_back_to_the_key(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(policy, "bench_reset", lambda reset_at, now: reset_at)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], _429({"Retry-After": "0"}))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home) as p:
        post(p)
        time.sleep(0.01)       # the clock moves past "now": the bench is over (what the floor prevents)
        post(p)
    assert up.hits(EDGE_KEYS[0]) > 2


def test_control_without_floor_or_avoidance_a_healthy_key_gets_a_503(tmp_home, up, monkeypatch) -> None:
    """The reported bug: Retry-After: 0 made the same row be picked again until the tries ran out."""
    monkeypatch.setattr(policy, "bench_reset", lambda reset_at, now: reset_at)
    monkeypatch.setattr(chain_mod.Attempt, "failed_on", lambda self: set())
    monkeypatch.setattr(PoolClient, "eligible", lambda self, row: True)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], _429({"Retry-After": "0"}))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home) as p:
        r = post(p)
    assert r.status_code != 200 or up.hits(EDGE_KEYS[0]) > 2


def test_control_without_the_checked_parser_an_absurd_reset_is_stored(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(outside, "seconds", lambda value, what, **kw: float(value))
    monkeypatch.setattr(outside, "epoch", lambda value, what, *, now, **kw: parse_epoch(value))
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], _429({"Retry-After": "1e290"}))
    with running_chain_proxy(tmp_home) as p:
        post(p)
    row = json.loads(tmp_home.auth.read_bytes())["credential_pool"]["openrouter"][0]
    assert row["last_error_reset_at"] > time.time() + YEAR      # 1e+287: the console's crash


# --- every failure is an answer ------------------------------------------------------------

def _hold_lock(home) -> int:
    fd = os.open(home.root / "auth.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_held_lock_while_recording_a_bench_never_stops_another_key(tmp_home, up, proxy_log) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], http(402, {}, {"error": {"message": "Insufficient credits", "code": 402}}))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home, lock_timeout=0.3) as p:
        fd = _hold_lock(tmp_home)          # a Hermes refresh holding auth.lock
        try:
            first = post(p)
            second = post(p)
        finally:
            os.close(fd)
    assert first.status_code == 200 and first.headers["x-hermes-credential"] == "or1edg"
    assert second.headers["x-hermes-credential"] == "or1edg"     # the bench holds in memory
    assert up.hits(EDGE_KEYS[0]) == 1
    assert any("could not be recorded" in r.getMessage() and "LockTimeout" in r.getMessage()
               for r in proxy_log.records)
    after = strict_json(tmp_home.auth.read_bytes())["credential_pool"]["openrouter"]
    assert after[0]["last_status"] is None or after[0]["last_status"] == "exhausted"   # valid either way


def test_control_without_the_guard_a_held_lock_costs_the_client_its_answer(tmp_home, up, monkeypatch) -> None:
    async def unguarded(self, attempt, result, verdict, rid):
        return await run_blocking(self.chain.outcome, attempt, result, verdict)

    monkeypatch.setattr(forward.Forwarder, "_record", unguarded)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], http(402, {}, {"error": {"message": "Insufficient credits", "code": 402}}))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home, lock_timeout=0.3) as p:
        fd = _hold_lock(tmp_home)
        try:
            r = post(p)
        finally:
            os.close(fd)
    assert r.status_code == 500 and r.json()["error"]["type"] == "proxy_error"


def test_an_unreadable_store_while_recording_never_stops_another_key(tmp_home, up, proxy_log) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(EDGE_KEYS[0], http(402, {}, {"error": {"message": "Insufficient credits", "code": 402}}))
    up.script(EDGE_KEYS[1], http(200))
    with running_chain_proxy(tmp_home) as p:
        tmp_home.auth.write_bytes(b'{"credential_pool": {"openrouter": [')       # half a file
        r = post(p)
    assert r.status_code == 200 and r.headers["x-hermes-credential"] == "or1edg"
    assert tmp_home.auth.read_bytes() == b'{"credential_pool": {"openrouter": ['   # never written over
    assert any("StoreUnreadable" in rec.getMessage() for rec in proxy_log.records)


def test_a_2xx_cut_short_is_retried_where_it_can_be_and_otherwise_a_json_answer(tmp_home, up, proxy_log) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    up.script(EDGE_KEYS[0], cut(200, sent=12))
    with running_chain_proxy(tmp_home) as p:
        r = post(p)
    err = r.json()["error"]
    assert r.status_code == 502 and err["type"] == "upstream_unreachable"
    assert err["request_id"] == r.headers["x-hermes-request-id"]
    assert "no key was benched" in err["message"]
    assert any(err["request_id"] in rec.getMessage() for rec in proxy_log.records)
    assert status_fields(tmp_home)["or0edg"]["last_status"] is None


def test_a_row_id_with_cr_lf_is_served_with_the_header_escaped(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    doc = json.loads(tmp_home.auth.read_text())
    doc["credential_pool"]["openrouter"][0]["id"] = "or0\r\nX-Injected: yes"
    tmp_home.auth.write_text(json.dumps(doc))
    with running_chain_proxy(tmp_home) as p:
        r = post(p)
    assert r.status_code == 200
    assert r.headers["x-hermes-credential"] == "or0%0D%0AX-Injected: yes"
    assert "x-injected" not in r.headers


def test_control_an_unescaped_row_id_costs_the_answer(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(answers, "header_value", lambda text: text)
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    doc = json.loads(tmp_home.auth.read_text())
    doc["credential_pool"]["openrouter"][0]["id"] = "or0\r\nX-Injected: yes"
    tmp_home.auth.write_text(json.dumps(doc))
    with running_chain_proxy(tmp_home) as p:
        try:
            r = post(p)
        except httpx.HTTPError:
            return                                  # an empty reply
    assert r.status_code != 200


CANARY = "sk-or-v1-CANARYbug" + "0" * 24


def test_an_exception_in_our_code_is_json_with_a_request_id_logged_without_a_secret(
        tmp_home, up, proxy_log, monkeypatch) -> None:
    def broken(self, *a, **k):
        raise RuntimeError(f"a bug holding {CANARY}")

    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        monkeypatch.setattr(Chain, "select", broken)
        r = post(p)
    err = r.json()["error"]
    assert r.status_code == 500 and err["type"] == "proxy_error"
    assert err["request_id"] == r.headers["x-hermes-request-id"]
    logged = "\n".join(rec.getMessage() for rec in proxy_log.records)
    assert err["request_id"] in logged and "Traceback" in logged and "RuntimeError" in logged
    assert CANARY not in logged and CANARY not in r.text


def test_control_without_the_guard_the_500_has_no_request_id(tmp_home, up, monkeypatch) -> None:
    """aiohttp's own last answer (made JSON and redacted by the proxy's HTTP handler,
    store.proxy.edge.door.ProxyHttpServer) carries no request id the log could be searched for."""
    def broken(self, *a, **k):
        raise RuntimeError("a bug")

    async def unguarded(self, request):
        return await self._handle(request, 1)

    monkeypatch.setattr(ProxyServer, "handle", unguarded)
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        monkeypatch.setattr(Chain, "select", broken)
        r = post(p)
    assert r.status_code == 500 and "x-hermes-request-id" not in r.headers
    assert "request_id" not in r.json()["error"]
