"""Provider dialects through the proxy, with the real SDKs as clients: where ``/v1`` goes
on an Anthropic base that lacks it, and the ``openai-api`` pool (Hermes's id for OpenAI API
keys) serving OpenAI Responses. Both failed before the dialect table."""

from __future__ import annotations

import anthropic
import openai
import pytest

from store.dialects import registry
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow

API_KEY = "sk-ant-api03-dialecttest-" + "A" * 40
OA_KEY = "sk-proj-dialecttest-" + "0" * 40
OR_KEY = "sk-or-v1-dialecttest-" + "0" * 30
MODELS = {"data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5",
                    "created_at": "2025-09-29T00:00:00Z"}], "has_more": False, "first_id": "claude-sonnet-4-5",
          "last_id": "claude-sonnet-4-5"}
RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "ok (scripted)", "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def test_an_anthropic_base_without_v1_still_gets_v1_on_models(tmp_home, up) -> None:
    """``models.list()`` of the anthropic SDK: ``/v1/models`` upstream, with the native key."""
    write_store(tmp_home, make_store({"anthropic": [make_row("an0key", token=API_KEY, base_url=up.url)]}))
    tmp_home.config.write_text("model:\n  provider: anthropic\n  default: claude-sonnet-4-5\n")
    up.script(None, http(200, {}, MODELS))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        client = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30)
        got = list(client.models.list())
    assert [m.id for m in got] == ["claude-sonnet-4-5"]
    seen = [s for s in up.seen if "models" in s.target]
    assert seen[0].target.startswith("/v1/models") and seen[0].header("x-api-key") == [API_KEY]


def test_the_openai_api_pool_serves_responses(tmp_home, up) -> None:
    """Before, ``openai-api`` spoke no Responses: Codex pointed at it was served by the
    fallback route on another model."""
    write_store(tmp_home, make_store({
        "openai-api": [make_row("oa0key", token=OA_KEY, base_url=up.url + "/v1")],
        "openrouter": [make_row("or0key", token=OR_KEY, base_url=up.url + "/api/v1")]}))
    tmp_home.config.write_text("model:\n  provider: openai-api\n  default: gpt-5\n"
                               "fallback_providers:\n  - provider: openrouter\n    model: openai/gpt-5\n")
    up.script(None, http(200, {}, RESPONSE))
    with running_chain_proxy(tmp_home, primary="openai-api") as p:
        client = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        got = client.responses.with_raw_response.create(model="gpt-5", input="hi")
    assert got.parse().output_text == "ok (scripted)"
    assert got.headers["x-hermes-pool"] == "openai-api" and got.headers["x-hermes-fallback"] == "0"
    (seen,) = [s for s in up.seen if s.target.endswith("/responses")]
    assert seen.target == "/v1/responses" and seen.key == OA_KEY


def test_control_without_the_table_row_openai_api_is_served_by_the_fallback(tmp_home, up, monkeypatch) -> None:
    monkeypatch.delitem(registry.PROVIDERS, "openai-api")
    write_store(tmp_home, make_store({
        "openai-api": [make_row("oa0key", token=OA_KEY, base_url=up.url + "/v1")],
        "openrouter": [make_row("or0key", token=OR_KEY, base_url=up.url + "/api/v1")]}))
    tmp_home.config.write_text("model:\n  provider: openai-api\n  default: gpt-5\n"
                               "fallback_providers:\n  - provider: openrouter\n    model: openai/gpt-5\n")
    up.script(None, http(200, {}, RESPONSE))
    with running_chain_proxy(tmp_home, primary="openai-api") as p:
        client = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        got = client.responses.with_raw_response.create(model="gpt-5", input="hi")
    assert got.headers["x-hermes-pool"] == "openrouter"      # caught: the old answer
