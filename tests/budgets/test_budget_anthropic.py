"""A window cap through a running proxy with the real ``anthropic`` SDK (#29): the upstream's
own ``anthropic-ratelimit-unified-5h-*`` headers say 85% of the 5h window is used; with
``cap: {5h: 80%}`` the key is skipped for the other, and once both are past the cap the SDK
gets a 429 in Anthropic's shape naming the cap and when the window resets. Its control: the
same answers under an 90% cap, the first key serves again."""

from __future__ import annotations

import time

import anthropic
import pytest

from tests.budgets.conftest import budgets
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow
SONNET = "claude-sonnet-4-5"
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": SONNET,
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 3, "output_tokens": 2}}


def seed(home, base: str) -> None:
    """An anthropic pool: an API key, then a subscription login (both on the scripted upstream)."""
    write_store(home, make_store({"anthropic": [
        make_row("an0key", label="api-key", priority=0, token="sk-ant-api03-budgettest-" + "A" * 40, base_url=base),
        make_row("an1oat", label="claude-max", priority=1, token="sk-ant-oat01-budgettest-" + "B" * 40,
                 auth_type="oauth", source="hermes_pkce", base_url=base)]}))
    home.config.write_text("model:\n  provider: anthropic\n  default: claude-sonnet-4-5\n")


def used(fraction: float):
    reset = int(time.time()) + 3600
    return http(200, {"anthropic-ratelimit-unified-5h-utilization": str(fraction),
                      "anthropic-ratelimit-unified-5h-reset": str(reset)}, MESSAGE)


def run(home, cap: str, n: int):
    with ScriptedUpstream() as up:
        up.script(None, used(0.85))
        seed(home, up.url)
        budgets(home, f"anthropic:\n  cap: {{5h: {cap}}}")
        out = []
        with running_chain_proxy(home, primary="anthropic") as p:
            c = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30)
            for _ in range(n):
                try:
                    raw = c.messages.with_raw_response.create(model=SONNET, max_tokens=16,
                                                              messages=[{"role": "user", "content": "hi"}])
                    out.append(raw.headers["X-Hermes-Credential"])
                except anthropic.RateLimitError as exc:
                    out.append(exc)
        return out


def test_past_the_cap_the_other_key_then_a_429_naming_it(tmp_home):
    got = run(tmp_home, "80%", 3)
    assert got[:2] == ["an0key", "an1oat"]
    err = got[2]
    assert isinstance(err, anthropic.RateLimitError)
    body = err.body
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert "over its cap: 5h window at 85%, cap 80%, resets " in body["error"]["message"]
    assert 3500 <= int(err.response.headers["Retry-After"]) <= 3601


def test_control_under_the_cap_the_first_key_serves_again(tmp_home):
    assert run(tmp_home, "90%", 3) == ["an0key"] * 3
