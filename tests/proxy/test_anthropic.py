"""Anthropic Messages through the proxy, with the real ``anthropic`` SDK as the client.

A scripted Anthropic-shaped upstream (tests/proxy/upstream.py, which records every request
byte for byte) stands in for api.anthropic.com; the proxy serves the home's ``anthropic``
pool to ``messages.create``, ``messages.stream`` and ``messages.count_tokens``. Shown here:
each row's credential goes upstream in the form its type needs, a 429 rotates and benches
one model only (another model on the same key still serves), SSE events reach the client
in order and intact, the proxy's own errors are Anthropic-shaped, and an Anthropic request
never falls back to an OpenAI-shaped pool. Each protection has a control that removes it.
"""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

from store.agent import judge as judge_mod
from store.dialects import anthropic as proxy_anthropic
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from tests.conftest import read_doc, write_store
from tests.proxy.anthropic_helpers import API_KEY, CLIENT_BETA, HAIKU, OAUTH, OR_KEY, SONNET, client, seed
from tests.proxy.upstream import ScriptedUpstream, http, stream
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow

MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": SONNET,
           "content": [{"type": "text", "text": "ok (scripted)"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
RATE_LIMITED = http(429, {"retry-after": "30"}, {"type": "error", "error": {
    "type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def messages(up: ScriptedUpstream) -> list:
    return [s for s in up.seen if s.target.startswith("/v1/messages")]


def create(p, model: str = SONNET, **kw):
    return client(p).messages.create(model=model, max_tokens=16, messages=[{"role": "user", "content": "hi"}],
                                     **kw)


# --- the credential in the form its type needs --------------------------------------------------

def test_an_api_key_row_goes_as_x_api_key_with_the_clients_headers(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        msg = create(p, extra_headers={"anthropic-beta": CLIENT_BETA, "anthropic-version": "2023-06-01"})
    assert msg.content[0].text == "ok (scripted)"
    seen = messages(up)[0]
    assert seen.target == "/v1/messages"
    assert seen.header("x-api-key") == [API_KEY]
    assert seen.header("authorization") == []            # never the client's "local", nor a bearer
    assert seen.header("anthropic-version") == ["2023-06-01"]
    assert seen.header("anthropic-beta") == [CLIENT_BETA]


def test_an_oauth_row_goes_as_a_bearer_with_hermes_oauth_betas(tmp_home, up) -> None:
    seed(tmp_home, up.url, oauth_first=True)
    up.script(None, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p, extra_headers={"anthropic-beta": CLIENT_BETA})
    seen = messages(up)[0]
    assert seen.header("authorization") == [f"Bearer {OAUTH}"]
    assert seen.header("x-api-key") == []
    betas = seen.header("anthropic-beta")[0].split(",")
    assert betas[0] == CLIENT_BETA and {"oauth-2025-04-20", "claude-code-20250219"} <= set(betas)


def test_control_an_oauth_token_sent_as_an_api_key_is_caught(tmp_home, up, monkeypatch) -> None:
    """Without the OAuth rule the token goes as x-api-key (Anthropic refuses that): the
    assertions above would fail."""
    monkeypatch.setattr(proxy_anthropic, "uses_oauth", lambda *a: False)
    seed(tmp_home, up.url, oauth_first=True)
    up.script(None, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
    seen = messages(up)[0]
    assert seen.header("x-api-key") == [OAUTH] and seen.header("authorization") == []


def test_an_exposed_bind_takes_the_client_key_as_x_api_key(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, http(200, {}, MESSAGE))
    gate = Gate([b"client-key-0123456789"])
    with running_chain_proxy(tmp_home, primary="anthropic", gate=gate) as p:
        ok = client(p).with_options(api_key="client-key-0123456789").messages.create(
            model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(anthropic.AuthenticationError) as refused:
            client(p).with_options(api_key="wrong").messages.create(
                model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert ok.id == "msg_01"
    body = refused.value.body
    assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    assert len(messages(up)) == 1                      # the refused one never went upstream


# --- rotation and per-model benches ---------------------------------------------------------------

def test_a_429_rotates_and_benches_that_model_only(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(API_KEY, RATE_LIMITED, RATE_LIMITED, http(200, {}, MESSAGE))   # retried once, then benched
    up.script(OAUTH, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        first = client(p).messages.with_raw_response.create(
            model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        assert first.headers["x-hermes-credential"] == "an1oat"       # rotated within the request
        other = client(p).messages.with_raw_response.create(
            model=HAIKU, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        again = client(p).messages.with_raw_response.create(
            model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert other.headers["x-hermes-credential"] == "an0key"    # the same key still serves another model
    assert again.headers["x-hermes-credential"] == "an1oat"    # and is skipped for the benched one
    row = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert row["last_status"] is None and row["last_error_code"] is None     # the key is not benched
    assert set(row["model_cooldowns"]) == {SONNET}
    assert row["model_cooldowns"][SONNET] > row["model_cooldown_observed_at"][SONNET] + 25   # Retry-After: 30
    assert up.hits(API_KEY) == 3                              # 2 for the 429s, 1 for HAIKU


def test_control_without_the_model_rule_the_whole_key_is_benched(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(judge_mod, "model_scoped", lambda *a: False)
    seed(tmp_home, up.url)
    up.script(API_KEY, RATE_LIMITED, RATE_LIMITED, http(200, {}, MESSAGE))
    up.script(OAUTH, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
        other = client(p).messages.with_raw_response.create(
            model=HAIKU, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert other.headers["x-hermes-credential"] == "an1oat"    # caught: HAIKU lost the key too
    assert read_doc(tmp_home)["credential_pool"]["anthropic"][0]["last_status"] == "exhausted"


def test_a_model_benched_on_every_key_is_a_503_for_that_model_only(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(API_KEY, RATE_LIMITED, RATE_LIMITED, http(200, {}, MESSAGE))
    up.script(OAUTH, RATE_LIMITED, RATE_LIMITED, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError) as out:
            create(p)
        other = create(p, model=HAIKU)
        assert p.chain.runtime.active == 0               # the chain stayed on the route
    err = out.value
    assert err.status_code == 503 and err.body["error"]["type"] == "overloaded_error"
    assert err.body["error"]["kind"] == "all_credentials_cooling"
    assert 1 <= int(err.response.headers["retry-after"]) <= 30
    assert other.id == "msg_01"


# --- streams, count_tokens --------------------------------------------------------------------------

def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


STREAM = [
    _event("message_start", {"type": "message_start", "message": dict(MESSAGE, content=[], stop_reason=None,
                                                                      usage={"input_tokens": 3, "output_tokens": 0})}),
    _event("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}}),
    _event("ping", {"type": "ping"}),
    _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": "Hel"}}),
    _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": "lo"}}),
    _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                             "usage": {"output_tokens": 2}}),
    _event("message_stop", {"type": "message_stop"}),
]


def test_messages_stream_relays_every_event_in_order_and_intact(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, stream(STREAM))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with client(p).messages.stream(model=SONNET, max_tokens=16,
                                       messages=[{"role": "user", "content": "hi"}]) as s:
            kinds = [e.type for e in s]
            text = s.get_final_message().content[0].text
        raw = httpx.post(p.url + "/messages", timeout=30, headers={"x-api-key": "local"},
                         json={"model": SONNET, "max_tokens": 16, "stream": True, "messages": []})
    assert text == "Hello"
    assert [k for k in kinds if k in ("message_start", "content_block_start", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop")] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop"]
    assert raw.content == b"".join(STREAM)            # byte for byte, ping included


def test_an_error_event_mid_stream_reaches_the_client_as_sent(tmp_home, up) -> None:
    overloaded = _event("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    seed(tmp_home, up.url)
    up.script(None, stream(STREAM[:3] + [overloaded]))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError) as err, client(p).messages.stream(
                model=SONNET, max_tokens=16, messages=[{"role": "user", "content": "hi"}]) as s:
            for _ in s:
                pass
        raw = httpx.post(p.url + "/messages", timeout=30, json={"model": SONNET, "stream": True})
    assert "Overloaded" in str(err.value)
    assert raw.content == b"".join(STREAM[:3]) + overloaded


def test_count_tokens_goes_to_its_own_path(tmp_home, up) -> None:
    seed(tmp_home, up.url + "/v1")            # a base with /v1: the path is not doubled
    up.script(None, http(200, {}, {"input_tokens": 12}))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        counted = client(p).messages.count_tokens(model=SONNET, messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens == 12
    assert messages(up)[0].target == "/v1/messages/count_tokens"


# --- the protocol is not the pool; errors in Anthropic's shape --------------------------------------

def _all_benched(home) -> None:
    doc = read_doc(home)
    for row in doc["credential_pool"]["anthropic"]:
        row.update(last_status="dead", last_status_at=1.7e9, last_error_code=401, last_error_reason="token_revoked")
    write_store(home, doc)


def test_no_fallback_to_an_openai_shaped_pool_for_messages(tmp_home, up) -> None:
    seed(tmp_home, up.url, fallback=True)
    _all_benched(tmp_home)
    up.script(None, http(200))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError) as refused:
            create(p)
        chat = httpx.post(p.url + "/chat/completions", timeout=30, json={"model": "m", "messages": []})
    body = refused.value.body
    assert refused.value.status_code == 503 and body["type"] == "error"
    assert body["error"]["routes"] == [{"route": "anthropic", "paths": [
        "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
        "/v1/messages", "/v1/messages/count_tokens"]}]
    message = body["error"]["message"]
    assert "speak Anthropic Messages (anthropic)" in message     # the routes that speak it, by name
    assert "not tried: openrouter" in message                   # and the one refused, by name
    assert up.hits(OR_KEY) == 1                          # only the OpenAI request reached openrouter
    assert chat.status_code == 200 and chat.headers["x-hermes-pool"] == "openrouter"


def test_control_without_the_protocol_check_openrouter_gets_an_anthropic_request(tmp_home, up,
                                                                                monkeypatch) -> None:
    monkeypatch.setattr(Chain, "speaks", lambda self, i, protocol: True)
    seed(tmp_home, up.url, fallback=True)
    _all_benched(tmp_home)
    up.script(None, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
    assert up.hits(OR_KEY) == 1                          # caught: translated nothing, sent anyway


def test_the_proxys_own_errors_are_anthropic_shaped_on_messages_paths_only(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.NotFoundError) as missing:
            client(p).get("/v1/messages/batches", cast_to=object)
        wrong = httpx.get(p.url + "/messages", timeout=30)
        openai_shaped = httpx.post(p.url + "/audio/speech", timeout=30)
    assert missing.value.body["type"] == "error" and missing.value.body["error"]["type"] == "not_found_error"
    assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "invalid_request_error"
    assert wrong.json()["request_id"] == wrong.headers["x-hermes-request-id"]
    assert openai_shaped.json()["error"]["type"] == "not_found"      # OpenAI's shape elsewhere
