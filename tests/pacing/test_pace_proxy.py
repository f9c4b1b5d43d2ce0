"""Pacing through a running proxy (#30), with the real ``openai`` SDK as the client: a
``retry-after: 1`` rate limit on a pinned conversation's key is waited out and the same
key serves (one 200, nothing benched); a spent quota rotates at once. Negative control:
pacing off (``pace.max_wait: 0``) rotates to the other key."""

from __future__ import annotations

import openai
import pytest

from store.proxy.routing.chain import Chain
from tests.conftest import read_doc
from tests.pacing.windows import WindowedUpstream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow

MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def up():
    with WindowedUpstream() as u:
        yield u


@pytest.fixture
def pinned(monkeypatch):
    """Every attempt the chain chooses is a pinned conversation's (the affinity marker)."""
    select = Chain.select

    def pin(self, *a, **k):
        got = select(self, *a, **k)
        if got is not None:
            got.pinned = True
        return got
    monkeypatch.setattr(Chain, "select", pin)


def setup(home, up, max_wait: str = "2s") -> None:
    edge_seed(home, up.url, keys=2, fallback=False)
    (home.root / "hermes-admin.yaml").write_text(f"proxy:\n  pace: {{max_wait: {max_wait}}}\n")


def call(p):
    c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    return c.chat.completions.with_raw_response.create(**MSG)


def benched(home) -> set[str]:
    rows = read_doc(home)["credential_pool"]["openrouter"]
    return {r["id"] for r in rows if r.get("last_status") == "exhausted"}


def test_a_short_rate_limit_on_a_pinned_key_is_waited_out_on_the_same_key(tmp_home, up, pinned) -> None:
    setup(tmp_home, up)
    up.limit(EDGE_KEYS[0], 1.0)
    with running_chain_proxy(tmp_home) as p:
        got = call(p)
    assert got.http_response.status_code == 200
    assert up.hits(EDGE_KEYS[0]) == 2 and up.hits(EDGE_KEYS[1]) == 0
    assert got.headers["x-hermes-credential"] == "or0edg"
    assert benched(tmp_home) == set()


def test_a_spent_quota_on_a_pinned_key_rotates_at_once(tmp_home, up, pinned) -> None:
    setup(tmp_home, up)
    up.quota(EDGE_KEYS[0])
    with running_chain_proxy(tmp_home) as p:
        got = call(p)
    assert got.http_response.status_code == 200
    assert up.hits(EDGE_KEYS[0]) == 1 and up.hits(EDGE_KEYS[1]) == 1     # no wait, no same-key retry
    assert got.headers["x-hermes-credential"] == "or1edg"
    assert benched(tmp_home) == {"or0edg"}


def test_not_pinned_a_rate_limit_rotates_as_before(tmp_home, up) -> None:
    setup(tmp_home, up)
    up.limit(EDGE_KEYS[0], 1.0)
    with running_chain_proxy(tmp_home) as p:
        got = call(p)
    assert got.http_response.status_code == 200
    assert up.hits(EDGE_KEYS[0]) == 2 and up.hits(EDGE_KEYS[1]) == 1     # one same-key retry, then rotated
    row = next(r for r in read_doc(tmp_home)["credential_pool"]["openrouter"] if r["id"] == "or0edg")
    # benched only as long as the provider said (1 s, floored at 5 s), not the rate-limit TTL
    assert row["last_error_reset_at"] - row["last_status_at"] <= 6


def test_control_pacing_off_rotates(tmp_home, up, pinned) -> None:
    setup(tmp_home, up, max_wait="0s")
    up.limit(EDGE_KEYS[0], 1.0)
    with running_chain_proxy(tmp_home) as p:
        got = call(p)
    assert got.http_response.status_code == 200
    assert got.headers["x-hermes-credential"] == "or1edg"
    assert up.hits(EDGE_KEYS[1]) == 1 and benched(tmp_home) == {"or0edg"}


def test_a_client_that_leaves_during_the_wait_is_released_at_once(tmp_home, up, pinned) -> None:
    """A 5 s rate limit paced (``max_wait: 10s``); the client gives up after 0.3 s: its
    request leaves the proxy at once (well before the wait would end), and the key is
    never sent the retry."""
    setup(tmp_home, up, max_wait="10s")
    up.limit(EDGE_KEYS[0], 5.0)
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            c.chat.completions.create(**MSG)
        wait_until(lambda: p.server.in_flight == 0, timeout=2.0, what="the paced request released")
        assert up.hits(EDGE_KEYS[0]) == 1 and up.hits(EDGE_KEYS[1]) == 0
