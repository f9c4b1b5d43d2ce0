"""The Anthropic pool the proxy tests serve to the real ``anthropic`` SDK: its keys, its
config.yaml and the SDK client pointed at a proxy (shared by tests/proxy/test_anthropic.py and
tests/proxy/test_encoded_anthropic.py; a test module never imports another)."""

from __future__ import annotations

import anthropic

from tests.conftest import make_row, make_store, write_store

API_KEY = "sk-ant-api03-proxytest-" + "A" * 40
OAUTH = "sk-ant-oat01-proxytest-" + "B" * 40
OR_KEY = "sk-or-v1-anthropictest-" + "0" * 30
SONNET, HAIKU = "claude-sonnet-4-5", "claude-haiku-4-5"
CLIENT_BETA = "interleaved-thinking-2025-05-14"
CONFIG = """\
model:
  provider: anthropic
  default: claude-sonnet-4-5
fallback_providers:
  - provider: openrouter
    model: openai/gpt-5
"""


def seed(home, base: str, *, oauth_first: bool = False, fallback: bool = False) -> None:
    rows = [make_row("an0key", label="api-key", priority=0, token=API_KEY, base_url=base),
            make_row("an1oat", label="claude-max", priority=1, token=OAUTH, auth_type="oauth",
                     source="hermes_pkce", base_url=base)]
    if oauth_first:
        rows[0]["priority"], rows[1]["priority"] = 1, 0
    pools = {"anthropic": rows}
    if fallback:
        pools["openrouter"] = [make_row("or0key", token=OR_KEY, base_url=base + "/api/v1")]
    write_store(home, make_store(pools))
    home.config.write_text(CONFIG if fallback else CONFIG.split("fallback_providers")[0])


def client(p, **kw) -> anthropic.Anthropic:
    # The SDK appends /v1/messages to its base URL; no retries of its own (the proxy rotates).
    return anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30, **kw)
