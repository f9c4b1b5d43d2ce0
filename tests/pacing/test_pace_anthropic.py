"""Pacing with the real ``anthropic`` SDK (#30): a per-minute 429 whose subscription status
is still ``allowed`` is waited out on a pinned conversation's key (one answer, from that
key, nothing benched); the subscription ``rejected`` (a 5 h window at zero) is a spent
quota: the next key at once."""

from __future__ import annotations

import time

import anthropic
import pytest

from store.proxy.routing.chain import Chain
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.pacing.windows import WindowedUpstream
from tests.proxy.upstream import http
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow

KEYS = ["sk-ant-api03-pacetest-" + c * 40 for c in "AB"]
SONNET = "claude-sonnet-4-5"
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": SONNET,
           "content": [{"type": "text", "text": "ok (scripted)"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
PER_MINUTE = {"type": "error", "error": {"type": "rate_limit_error",
                                         "message": "Number of requests has exceeded your per-minute rate limit"}}


@pytest.fixture
def up():
    with WindowedUpstream() as u:
        u.script(None, http(200, {}, MESSAGE))
        yield u


@pytest.fixture(autouse=True)
def pinned(monkeypatch):
    select = Chain.select

    def pin(self, *a, **k):
        got = select(self, *a, **k)
        if got is not None:
            got.pinned = True
        return got
    monkeypatch.setattr(Chain, "select", pin)


def seed(home, base: str) -> None:
    write_store(home, make_store({"anthropic": [make_row(f"an{i}key", token=KEYS[i], priority=i, base_url=base)
                                                for i in range(2)]}))
    home.config.write_text(f"model:\n  provider: anthropic\n  default: {SONNET}\n")


def create(p):
    c = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30)
    return c.messages.with_raw_response.create(model=SONNET, max_tokens=8,
                                               messages=[{"role": "user", "content": "hi"}])


def test_unified_allowed_per_minute_limit_is_paced_on_the_same_key(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.limit(KEYS[0], 1.0, {"anthropic-ratelimit-unified-status": "allowed",
                            "anthropic-ratelimit-unified-5h-utilization": "0.3",
                            "anthropic-ratelimit-unified-5h-reset": str(int(time.time()) + 9000)}, PER_MINUTE)
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        got = create(p)
    assert got.parse().content[0].text == "ok (scripted)" and got.headers["x-hermes-credential"] == "an0key"
    assert up.hits(KEYS[0]) == 2 and up.hits(KEYS[1]) == 0
    row = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert row.get("last_status") is None and not row.get("model_cooldowns")


def test_unified_rejected_is_a_spent_quota_the_next_key_at_once(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    reset = str(int(time.time()) + 9000)
    up.quota(KEYS[0], http(429, {"anthropic-ratelimit-unified-status": "rejected",
                                 "anthropic-ratelimit-unified-5h-utilization": "1.0",
                                 "anthropic-ratelimit-unified-5h-reset": reset,
                                 "anthropic-ratelimit-unified-reset": reset},
                           {"type": "error", "error": {"type": "rate_limit_error",
                                                       "message": "This request would exceed your rate limit"}}))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        got = create(p)
    assert got.headers["x-hermes-credential"] == "an1key"
    assert up.hits(KEYS[0]) == 1 and up.hits(KEYS[1]) == 1
