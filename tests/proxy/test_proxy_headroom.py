"""The proxy rotates before the 429 (#21): through the real ``openai`` SDK, a key whose answers
announce nothing left until T receives nothing until T; the readings reach every proxy on the
home; a 503 counts a held key's reset; the threshold makes a key yield. The fake provider and
the proxy share a fake clock: no sleeps to wait, no timed asserts."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent.headroom import BENCH_REASON, SIDECAR, load
from store.paths import Home
from store.pools import policy
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from store.proxy.routing.picks import pick, usable_rows
from store.proxy.server import ProxyServer
from tests.conftest import make_row, read_doc
from tests.proxy_helpers import OR_KEYS, Running, seed, serving, wait_until
from tui.demo.fake_provider import FakeProvider, Quota

T = 1_800_000_000.0
MSG = [{"role": "user", "content": "hi"}]
BIG = 10_000


class Clock:
    def __init__(self, t: float = T) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@contextmanager
def proxy(home: Home, clock: Any = None, *, headroom: bool = True, watch: bool = False) -> Iterator[Running]:
    kw = {} if clock is None else {"clock": clock}
    chain = Chain(home, "openrouter", env=None, lock_timeout=5.0, headroom=headroom, **kw)
    with serving(ProxyServer(home, chain, Gate(None), port=0, watch=watch, **kw)) as running:
        yield running


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="any-client-bearer", max_retries=0, timeout=20)


def served_by(c: openai.OpenAI) -> str:
    raw = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
    assert raw.http_response.status_code == 200
    return raw.headers["x-hermes-credential"]


def keys_seen(fake: FakeProvider) -> dict[str, int]:
    return fake.requests_by_key("/chat/completions")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake(clock: Clock) -> Iterator[FakeProvider]:
    with FakeProvider(clock=clock) as fp:
        yield fp


def test_key_1_announces_nothing_left_and_receives_nothing_until_its_reset(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake)
    fake.quota(OR_KEYS[0], Quota(limit=3, window=30, dialect="openai"))
    fake.quota(OR_KEYS[1], Quota(limit=BIG, window=60, dialect="openai"))
    with proxy(tmp_home, clock) as p:
        c = sdk(p.url)
        assert [served_by(c) for _ in range(3)] == ["or0aaa"] * 3    # the third says: 0 left for 30 s
        assert served_by(c) == "or1aaa"                              # the next goes to key #2
        # The store learns it too (#27), as from the agent runtime: benched until the reset,
        # so Hermes agents on the host spend no request on it either.
        wait_until(lambda: read_doc(tmp_home)["credential_pool"]["openrouter"][0]["last_status"] == "exhausted",
                   what="the headroom bench in auth.json")
        row = read_doc(tmp_home)["credential_pool"]["openrouter"][0]
        assert row["last_error_reason"] == BENCH_REASON and row["last_error_reset_at"] == T + 30
        for step in range(1, 30, 4):                                 # ...and key #1 gets nothing until T+30
            clock.t = T + step
            assert served_by(c) == "or1aaa"
        assert keys_seen(fake).get(OR_KEYS[0]) == 3
        assert fake.log and all(status == 200 for *_x, status in fake.log)   # not one 429 upstream
        clock.t = T + 30.5                                           # the window reset
        assert served_by(c) == "or0aaa"
        assert keys_seen(fake)[OR_KEYS[0]] == 4
    assert ("openrouter", "or0aaa") in load(tmp_home, clock.t)


def test_control_reactive_the_same_key_is_sent_its_429s(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake)
    fake.quota(OR_KEYS[0], Quota(limit=3, window=30, dialect="openai"))
    with proxy(tmp_home, clock, headroom=False) as p:
        c = sdk(p.url)
        for _ in range(4):
            served_by(c)                   # the client still sees 200s: a 429 rotates
        statuses = [s for _m, _p, k, s in fake.log if k == OR_KEYS[0]]
        assert statuses.count(429) == 2    # the fourth request met a 429, and its same-key retry too
    assert not (tmp_home.root / SIDECAR).exists()


def test_a_retry_never_goes_to_a_key_that_said_nothing_left(tmp_home: Home, clock, fake) -> None:
    """A 429 that itself says nothing is left is not retried on the same key."""
    seed(tmp_home, fake)
    fake.quota(OR_KEYS[0], Quota(limit=0, window=30, dialect="anthropic"))
    with proxy(tmp_home, clock) as p:
        assert served_by(sdk(p.url)) == "or1aaa"
        assert [s for _m, _p, k, s in fake.log if k == OR_KEYS[0]] == [429]


def test_every_key_held_is_a_503_whose_retry_after_is_the_reset(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake)
    tmp_home.config.write_text("model:\n  provider: openrouter\n")     # no fallback
    for key in OR_KEYS:
        fake.quota(key, Quota(limit=1, window=40, dialect="openai"))
    with proxy(tmp_home, clock) as p:
        c = sdk(p.url)
        assert {served_by(c) for _ in range(3)} == {"or0aaa", "or1aaa", "or2aaa"}
        sent = len(fake.log)
        with pytest.raises(openai.APIStatusError) as info:
            c.chat.completions.create(model="m", messages=MSG)
        assert info.value.status_code == 503
        assert info.value.response.headers["Retry-After"] == "40"
        assert len(fake.log) == sent                                # nothing was sent upstream


def test_a_threshold_makes_a_key_yield_before_zero(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake, or_keys=2)
    (tmp_home.root / "hermes-admin.yaml").write_text("headroom:\n  pools:\n    openrouter: 0.5\n")
    fake.quota(OR_KEYS[0], Quota(limit=4, window=60, dialect="openai"))
    fake.quota(OR_KEYS[1], Quota(limit=4, window=60, dialect="openai"))
    with proxy(tmp_home, clock) as p:
        c = sdk(p.url)
        # Key #1 yields at half its quota, then key #2; then both are low and key #1 serves again.
        assert [served_by(c) for _ in range(5)] == ["or0aaa", "or0aaa", "or1aaa", "or1aaa", "or0aaa"]
        assert all(status == 200 for *_x, status in fake.log)


def test_control_without_a_threshold_a_key_serves_to_its_last_request(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake, or_keys=2)
    fake.quota(OR_KEYS[0], Quota(limit=4, window=60, dialect="openai"))
    with proxy(tmp_home, clock) as p:
        c = sdk(p.url)
        assert [served_by(c) for _ in range(5)] == ["or0aaa"] * 4 + ["or1aaa"]


def test_readings_reach_every_proxy_on_the_home(tmp_home: Home) -> None:
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        fake.quota(OR_KEYS[0], Quota(limit=1, window=300, dialect="openai"))
        with proxy(tmp_home, watch=True) as a, proxy(tmp_home, watch=True) as b:
            assert served_by(sdk(a.url)) == "or0aaa"       # A learns key #1 has nothing left
            wait_until(lambda: b.chain.headroom.holding("openrouter"), 15, "proxy B to read A's sidecar")
            assert served_by(sdk(b.url)) == "or1aaa"
            assert keys_seen(fake)[OR_KEYS[0]] == 1


def test_control_a_proxy_that_does_not_follow_the_sidecar_sends_the_429(tmp_home: Home) -> None:
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        fake.quota(OR_KEYS[0], Quota(limit=1, window=300, dialect="openai"))
        with proxy(tmp_home, watch=True) as a, proxy(tmp_home, watch=False) as b:
            served_by(sdk(a.url))
            wait_until(lambda: (tmp_home.root / SIDECAR).exists(), 15, "A's sidecar")
            served_by(sdk(b.url))
            assert 429 in [s for _m, _p, k, s in fake.log if k == OR_KEYS[0]]


# --- the picks stay policy.select's, with the least_used weight --------------------------------

@settings(max_examples=80, deadline=None)
@given(counts=st.lists(st.integers(0, 20), min_size=1, max_size=6),
       lefts=st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=6, max_size=6))
def test_weighed_least_used_picks_what_policy_select_picks(counts: list[int], lefts: list[float | None]) -> None:
    rows = [make_row(f"r{i}", token=f"sk-or-v1-weigh-{i:030d}", priority=i, request_count=n)
            for i, n in enumerate(counts)]
    left = {f"r{i}": lefts[i] for i in range(len(counts))}

    def weigh(r: dict) -> float | None:
        return left[r["id"]]

    plain = min(rows, key=lambda r: (r["request_count"], r["priority"]))["id"]
    mirror = [dict(r) for r in rows]
    expected = policy.select(mirror, "least_used", T, rng=random.Random(1), weigh=weigh)
    usable = usable_rows(rows, "least_used", T, policy.DEFAULT_TTLS, {}, 0)
    got = pick(usable, rows, random.Random(1), weigh)
    assert got["id"] == expected["id"] and rows == mirror
    if all(v is None for v in lefts[:len(counts)]):
        assert got["id"] == plain             # no reading: Hermes's own least_used


def test_readings_never_touch_auth_json(tmp_home: Home, clock, fake) -> None:
    seed(tmp_home, fake)
    fake.quota(OR_KEYS[0], Quota(limit=BIG, window=60, dialect="openai"))
    before = tmp_home.auth.read_bytes()
    with proxy(tmp_home, clock) as p:
        for _ in range(3):
            served_by(sdk(p.url))
            clock.t += 1.5
        wait_until(lambda: (tmp_home.root / SIDECAR).exists(), 15, "the sidecar")
    after = read_doc(tmp_home)["credential_pool"]["openrouter"]
    # Only the request counts moved (written behind, as always); no reading is in the store.
    assert [r["request_count"] for r in after] == [3, 0, 0]
    assert "ratelimit" not in tmp_home.auth.read_text() and tmp_home.auth.read_bytes() != before
    assert load(tmp_home, clock.t)[("openrouter", "or0aaa")].windows["requests"].remaining == BIG - 3
