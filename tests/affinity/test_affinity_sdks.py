"""Conversation affinity through the proxy, with the real ``openai`` (Chat Completions and
Responses) and ``anthropic`` (Messages) SDKs, against an upstream that models a prompt
cache per key (:mod:`tests.affinity.cache_upstream`).

- the turns of one conversation keep one key (and its cache: the SDK reads cached tokens
  from the second turn on); two conversations on a two-key ``round_robin`` pool use both;
- a pinned key whose quota is spent moves the conversation, which then keeps to its new key;
- the request log marks a pinned pick; the status file counts conversations per key.

Controls: with ``proxy.affinity.enabled: false`` the turns spread over the keys (and the
cache is cold every other turn); with ``max_share: off`` one busy conversation keeps one key
for every turn, where the default bound moves it.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES
from store.proxy.routing import affinity
from tests.affinity.cache_upstream import CacheUpstream
from tests.affinity.conversations import Talk, key, row_id, seed
from tests.proxy_helpers import running_chain_proxy

PROTOCOLS = [OPENAI, RESPONSES, ANTHROPIC]
OFF = "proxy:\n  affinity:\n    enabled: false\n"
NO_SHARE = "proxy:\n  affinity:\n    max_share: off\n"


@pytest.fixture
def up():
    with CacheUpstream(ttl=300) as u:
        yield u


def status(p) -> dict:
    async def build() -> dict:
        return p.server.status()
    return p.call(build())


def interleave(talks: list[Talk], turns: int) -> list[list[tuple[str, int]]]:
    got: list[list[tuple[str, int]]] = [[] for _ in talks]
    for _ in range(turns):
        for i, t in enumerate(talks):
            got[i].append(t.turn())
    return got


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_conversation_keeps_its_key_and_two_use_both(tmp_home, up, protocol):
    pool = seed(tmp_home, up.url, protocol)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        talks = [Talk(protocol, p.url, "Plan a trip to Lisbon."), Talk(protocol, p.url, "Write a haiku on rain.")]
        got = interleave(talks, 6)
        st = status(p)
    keys = [{rid for rid, _c in g} for g in got]
    assert all(len(k) == 1 for k in keys), keys            # each conversation: one key
    assert keys[0] != keys[1]                               # two conversations: both keys
    assert all(c == 0 for _r, c in (g[0] for g in got))     # a first turn is never cached
    assert all(c > 0 for g in got for _r, c in g[1:])       # every later turn is, as the SDK reads it
    assert up.hit_ratio() == pytest.approx(10 / 12)
    assert up.cached_share() > 0.6
    log = st["recent_requests"]
    assert [r["pinned"] for r in log] == [False, False] + [True] * 10
    assert st["affinity"]["conversations"][pool] == {row_id(0): 1, row_id(1): 1}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_control_with_affinity_off_the_turns_spread_and_the_cache_goes_cold(tmp_home, up, protocol):
    pool = seed(tmp_home, up.url, protocol, settings=OFF)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        got = interleave([Talk(protocol, p.url, "Plan a trip to Lisbon.")], 6)[0]
        st = status(p)
    assert {rid for rid, _c in got} == {row_id(0), row_id(1)}
    assert up.hit_ratio() == 0       # the previous turn is always on the other key
    assert up.cached_share() < 0.6   # only a turn from longer ago counts, in part
    assert not any(r["pinned"] for r in st["recent_requests"])
    assert st["affinity"]["conversations"] == {}


def test_a_client_marker_names_the_conversation_whatever_its_opening(tmp_home, up):
    pool = seed(tmp_home, up.url, OPENAI)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        first = Talk(OPENAI, p.url, "one opening", extra={"prompt_cache_key": "conv-42"})
        other = Talk(OPENAI, p.url, "another opening", extra={"prompt_cache_key": "conv-42"})
        a, _ = first.turn()
        Talk(OPENAI, p.url, "a third conversation").turn()    # round robin moves on
        b, _ = other.turn()
    assert a == b


def test_a_spent_pinned_key_moves_the_conversation_which_keeps_to_the_new_key(tmp_home, up):
    pool = seed(tmp_home, up.url, ANTHROPIC)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        talk = Talk(ANTHROPIC, p.url, "Summarise the report.")
        before = [talk.turn()[0] for _ in range(3)]
        assert len(set(before)) == 1
        pinned = before[0]
        up.spent.add(key(ANTHROPIC, int(pinned[1])))
        after = [talk.turn() for _ in range(4)]
        st = status(p)
    assert {rid for rid, _c in after} == {row_id(1 - int(pinned[1]))}
    assert after[0][1] == 0 and all(c > 0 for _r, c in after[1:])     # one cold turn, then warm again
    log = st["recent_requests"]
    assert [r["pinned"] for r in log[-4:]] == [False, True, True, True]
    assert st["affinity"]["moved"].get("refused") == 1


def test_one_busy_conversation_is_moved_past_its_share(tmp_home, up):
    pool = seed(tmp_home, up.url, OPENAI)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        got = interleave([Talk(OPENAI, p.url, "A long agent run.")], 24)[0]
        st = status(p)
    used = [rid for rid, _c in got]
    assert set(used) == {row_id(0), row_id(1)}
    assert max(used.count(r) for r in set(used)) <= 0.6 * 24 + 1
    assert st["affinity"]["moved"].get("share", 0) >= 1


def test_control_with_max_share_off_one_busy_conversation_takes_one_key(tmp_home, up):
    pool = seed(tmp_home, up.url, OPENAI, settings=NO_SHARE)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        got = interleave([Talk(OPENAI, p.url, "A long agent run.")], 24)[0]
    assert len({rid for rid, _c in got}) == 1


def test_fill_first_pools_pin_nothing(tmp_home, up):
    pool = seed(tmp_home, up.url, OPENAI, strategy="fill_first")
    with running_chain_proxy(tmp_home, primary=pool) as p:
        interleave([Talk(OPENAI, p.url, "x"), Talk(OPENAI, p.url, "y")], 3)
        st = status(p)
    assert not any(r["pinned"] for r in st["recent_requests"])
    assert st["affinity"] == {"conversations": {}, "pins": 0, "moved": {}}


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["model", "messages", "role", "content", "system", "input", "metadata", "user_id",
                         "prompt_cache_key", "cache_control", "ttl", "tools"]), inner, max_size=4),
    max_leaves=20)


def test_hostile_bodies_through_a_pinning_pool_never_break_the_proxy(tmp_home, up):
    """Whatever a client sends to a pool that pins, the proxy answers as it would without
    affinity: the upstream's answer, never the proxy's own internal error."""
    pool = seed(tmp_home, up.url, OPENAI)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        url = p.url + "/chat/completions"

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(doc=JSONISH, marker=st.text(max_size=20))
        def send(doc, marker):
            body = json.dumps(doc).encode()
            marker = marker.strip()       # a header value with edge spaces is the client library's to refuse
            headers = {"Content-Type": "application/json", "x-session-affinity": marker} if (
                marker and marker.isprintable() and marker.isascii()) else {}
            got = httpx.post(url, content=body, headers=headers, timeout=30)
            assert got.status_code != 500, got.text
            assert "proxy_error" not in got.text

        send()


def test_control_a_namer_that_raises_is_seen_as_the_proxy_s_own_error(tmp_home, up, monkeypatch):
    """The check above can fail: a namer that raises makes the proxy answer its own 500."""
    def boom(self):
        raise RuntimeError("namer broke")
    monkeypatch.setattr(affinity.Conversation, "_work_out", boom)
    pool = seed(tmp_home, up.url, OPENAI)
    with running_chain_proxy(tmp_home, primary=pool) as p:
        got = httpx.post(p.url + "/chat/completions", json={"model": "m", "messages": [{"role": "user",
                                                                                      "content": "x"}]}, timeout=30)
    assert got.status_code == 500 and "proxy_error" in got.text
