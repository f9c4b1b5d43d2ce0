"""OpenAI Responses through the proxy, with the real ``openai`` SDK's ``responses.create``.

The primary is the Codex backend (``openai-codex``), reached the way Hermes reaches it
(its headers, the row's ChatGPT account); a usage limit rotates to the next key; when the
pool is out the request falls back past a route that does not speak Responses (``nous``) to
one that does (``openrouter``), with the fallback's model. Streams arrive in order and
intact. A 429 that names the model asked for benches that model only. Each protection has
a control that removes it.
"""

from __future__ import annotations

import base64
import dataclasses
import json

import httpx
import openai
import pytest

from store.dialects import codex, registry
from store.dialects.dialect import bearer
from store.proxy.routing.chain import Chain
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http, stream
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow


def _jwt(account: str, n: int) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return ".".join((part({"alg": "RS256"}), part({"https://api.openai.com/auth": {"chatgpt_account_id": account},
                                                   "n": n}), "c2lnbmF0dXJl" + "x" * 20))


CODEX = [_jwt("acct-first", 0), _jwt("acct-second", 1)]
NOUS_KEY = "sk-nous-responsestest-00000000000000000001"
OR_KEY = "sk-or-v1-responsestest-" + "0" * 30
OPENAI_KEYS = ["sk-proj-responsestest-" + str(i) * 30 for i in range(2)]
CONFIG = """\
model:
  provider: openai-codex
  default: gpt-5-codex
fallback_providers:
  - provider: nous
    model: nous-hermes-4
  - provider: openrouter
    model: openai/gpt-5
"""
USAGE_LIMIT = http(429, {}, {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached"}})


def response(text: str = "ok (scripted)", status: str = "completed", model: str = "gpt-5-codex") -> dict:
    output = [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}] if text else []
    return {"id": "resp_1", "object": "response", "created_at": 1_700_000_000, "status": status, "model": model,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def seed(home, base: str) -> None:
    write_store(home, make_store({
        "openai-codex": [make_row(f"cx{i}tok", token=t, priority=i, auth_type="oauth", source="device_code",
                                  base_url=base + "/backend-api/codex") for i, t in enumerate(CODEX)],
        "nous": [make_row("ns0key", token=NOUS_KEY, base_url=base + "/nous/v1")],
        "openrouter": [make_row("or0key", token=OR_KEY, base_url=base + "/api/v1")],
    }))
    home.config.write_text(CONFIG)


def client(p) -> openai.OpenAI:
    return openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)


def responses_seen(up: ScriptedUpstream) -> list:
    return [s for s in up.seen if s.target.endswith("/responses")]


def test_responses_create_reaches_codex_the_way_hermes_does(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        got = client(p).responses.create(model="gpt-5-codex", input="hi",
                                         extra_headers={"ChatGPT-Account-ID": "the-clients-own"})
    assert got.output_text == "ok (scripted)"
    seen = responses_seen(up)[0]
    assert seen.target == "/backend-api/codex/responses"
    assert seen.header("authorization") == [f"Bearer {CODEX[0]}"]
    assert seen.header("chatgpt-account-id") == ["acct-first"]      # the row's account, not the client's
    assert seen.header("originator") == ["codex_cli_rs"]
    assert seen.header("user-agent")[0].startswith("codex_cli_rs/")


def test_control_without_the_codex_headers_the_backend_sees_the_clients_account(tmp_home, up, monkeypatch) -> None:
    """The Codex dialect's attach swapped for the plain OpenAI bearer: the client's account
    header goes through and no originator is set (the assertions above would fail)."""
    monkeypatch.setitem(registry.DIALECTS, "codex", dataclasses.replace(codex.DIALECT, attach=bearer))
    seed(tmp_home, up.url)
    up.script(None, http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        client(p).responses.create(model="gpt-5-codex", input="hi",
                                   extra_headers={"ChatGPT-Account-ID": "the-clients-own"})
    seen = responses_seen(up)[0]
    assert seen.header("chatgpt-account-id") == ["the-clients-own"] and seen.header("originator") == []


@pytest.mark.parametrize("sent,upstream", [("my-own-tool", "codex_cli_rs"), ("codex_vscode", "codex_vscode"),
                                            ("Codex Desktop", "Codex Desktop")])
def test_only_an_originator_the_backend_lets_through_is_kept(tmp_home, up, sent, upstream) -> None:
    seed(tmp_home, up.url)
    up.script(None, http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        client(p).responses.create(model="gpt-5-codex", input="hi", extra_headers={"originator": sent})
    assert responses_seen(up)[0].header("originator") == [upstream]


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


STREAM = [
    _event("response.created", {"type": "response.created", "sequence_number": 0,
                                "response": response("", "in_progress")}),
    _event("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                                          "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                          "delta": "Hel", "logprobs": []}),
    _event("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 2,
                                          "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                          "delta": "lo", "logprobs": []}),
    _event("response.completed", {"type": "response.completed", "sequence_number": 3,
                                  "response": response("Hello")}),
]


def test_a_streamed_response_arrives_in_order_and_intact(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, stream(STREAM))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        events = list(client(p).responses.create(model="gpt-5-codex", input="hi", stream=True))
        raw = httpx.post(p.url + "/responses", timeout=30, json={"model": "gpt-5-codex", "stream": True})
    assert [e.type for e in events] == ["response.created", "response.output_text.delta",
                                        "response.output_text.delta", "response.completed"]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Hello"
    assert raw.content == b"".join(STREAM)


def test_a_usage_limit_rotates_to_the_next_codex_key(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(CODEX[0], USAGE_LIMIT)
    up.script(CODEX[1], http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        got = client(p).responses.with_raw_response.create(model="gpt-5-codex", input="hi")
    assert got.headers["x-hermes-credential"] == "cx1tok" and got.headers["x-hermes-fallback"] == "0"
    assert up.hits(CODEX[0]) == 1                       # a usage limit is not retried
    rows = read_doc(tmp_home)["credential_pool"]["openai-codex"]
    assert rows[0]["last_status"] == "exhausted" and rows[1]["last_status"] is None


def test_fallback_skips_a_route_that_does_not_speak_responses(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(CODEX[0], USAGE_LIMIT)
    up.script(CODEX[1], USAGE_LIMIT)
    up.script(None, http(200, {}, response(model="openai/gpt-5")))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        got = client(p).responses.with_raw_response.create(model="gpt-5-codex", input="hi")
        chat = httpx.post(p.url + "/chat/completions", timeout=30, json={"model": "m", "messages": []})
    assert got.headers["x-hermes-pool"] == "openrouter" and got.headers["x-hermes-fallback"] == "1"
    served = responses_seen(up)[-1]
    assert served.target == "/api/v1/responses" and json.loads(served.body)["model"] == "openai/gpt-5"
    assert up.hits(NOUS_KEY) == 1 and chat.headers["x-hermes-pool"] == "nous"   # nous serves chat only


def test_control_without_the_protocol_check_nous_gets_the_responses_request(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(Chain, "speaks", lambda self, i, protocol: True)
    seed(tmp_home, up.url)
    up.script(CODEX[0], USAGE_LIMIT)
    up.script(CODEX[1], USAGE_LIMIT)
    up.script(None, http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai-codex") as p:
        got = client(p).responses.with_raw_response.create(model="gpt-5-codex", input="hi")
    assert got.headers["x-hermes-pool"] == "nous"         # caught


def _openai_home(home, base: str) -> None:
    write_store(home, make_store({"openai": [make_row(f"oa{i}key", token=k, priority=i, base_url=base + "/v1")
                                             for i, k in enumerate(OPENAI_KEYS)]}))
    home.config.write_text("model:\n  provider: openai\n  default: gpt-5\n")


@pytest.mark.parametrize("message, model_only", [
    ("Rate limit reached for gpt-5 in organization org-1 on tokens per min (TPM): Limit 30000", True),
    ("Rate limit reached in organization org-1 on requests per min (RPM)", False),     # the key's limit
    ("Rate limit reached for gpt-5-mini in organization org-1 on tokens per min", False),   # another model
])
def test_a_429_naming_the_model_benches_that_model_only(tmp_home, up, message, model_only) -> None:
    _openai_home(tmp_home, up.url)
    limited = http(429, {}, {"error": {"message": message, "type": "tokens", "code": "rate_limit_exceeded"}})
    up.script(OPENAI_KEYS[0], limited, limited, http(200, {}, response()))
    up.script(OPENAI_KEYS[1], http(200, {}, response()))
    with running_chain_proxy(tmp_home, primary="openai") as p:
        first = client(p).responses.with_raw_response.create(model="gpt-5", input="hi")
        other = client(p).responses.with_raw_response.create(model="gpt-5-nano", input="hi")
    row = read_doc(tmp_home)["credential_pool"]["openai"][0]
    assert first.headers["x-hermes-credential"] == "oa1key"
    assert (other.headers["x-hermes-credential"] == "oa0key") is model_only
    assert (row.get("model_cooldowns") or {}).keys() == ({"gpt-5"} if model_only else set())
    assert (row["last_status"] is None) is model_only
