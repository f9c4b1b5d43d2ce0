"""429 triage (#30): the same scripted answers (openai, anthropic, codex headers and
bodies) through the one judgement give a rate limit or a spent quota, and the wait the
provider asked for. A spent quota benches and rotates at once; the negative control
(triage off: every 429 a rate limit) spends a same-key retry on it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent import judge as judge_mod
from store.agent.judge import judge
from store.agent.outcomes import RETRY, ROTATED, Result
from store.agent.pool_client import PoolClient
from store.agent.triage import QUOTA, RATE_LIMIT, may_pace
from store.proxy.edge.wire import result_of
from tests.conftest import make_row, make_store, write_store

NOW = 1_800_000_000.0


def answer(status: int, headers: dict[str, str], body: object) -> Result:
    return result_of(status, headers, json.dumps(body).encode())


def oai(code: str, message: str, kind: str = "requests") -> dict:
    return {"error": {"message": message, "type": kind, "code": code}}


def ant(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def iso(seconds: float) -> str:
    import datetime
    return datetime.datetime.fromtimestamp(NOW + seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


TABLE = [
    # (name, status, headers, body, triage, wait)
    ("openai per-minute, retry-after 1", 429,
     {"retry-after": "1", "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1s"},
     oai("rate_limit_exceeded", "Rate limit reached for requests per min (RPM)"), RATE_LIMIT, 1.0),
    ("openai tokens per minute, 20 s", 429, {"x-ratelimit-reset-tokens": "20s"},
     oai("rate_limit_exceeded", "Rate limit reached on tokens per min (TPM)", "tokens"), RATE_LIMIT, 20.0),
    ("openai no reset said", 429, {}, oai("rate_limit_exceeded", "Rate limit reached"), RATE_LIMIT, None),
    ("openai insufficient_quota", 429, {},
     oai("insufficient_quota", "You exceeded your current quota, please check your plan", "insufficient_quota"),
     QUOTA, None),
    ("openai requests per day at zero", 429,
     {"x-ratelimit-limit-requests": "10000", "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "6h0m0s"},
     oai("rate_limit_exceeded", "Rate limit reached for requests per day (RPD)"), QUOTA, 21600.0),
    ("openrouter 402", 402, {}, {"error": {"code": 402, "message": "Insufficient credits"}}, QUOTA, None),
    ("anthropic unified allowed, retry-after 1", 429,
     {"retry-after": "1", "anthropic-ratelimit-unified-status": "allowed",
      "anthropic-ratelimit-unified-5h-utilization": "0.4",
      "anthropic-ratelimit-unified-5h-reset": str(int(NOW + 7000))},
     ant("rate_limit_error", "Number of requests has exceeded your per-minute rate limit"), RATE_LIMIT, 1.0),
    ("anthropic per-minute window at zero", 429,
     {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
      "anthropic-ratelimit-requests-reset": iso(2)},
     ant("rate_limit_error", "Number of requests has exceeded your per-minute rate limit"), RATE_LIMIT, 2.0),
    ("anthropic unified rejected, 5h at zero", 429,
     {"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-5h-utilization": "1.0",
      "anthropic-ratelimit-unified-5h-reset": str(int(NOW + 7200)),
      "anthropic-ratelimit-unified-reset": str(int(NOW + 7200))},
     ant("rate_limit_error", "This request would exceed your account's rate limit"), QUOTA, 7200.0),
    ("anthropic 7d at zero, no status", 429,
     {"anthropic-ratelimit-unified-7d-utilization": "1.0", "anthropic-ratelimit-unified-7d-reset": str(int(NOW + 3e5))},
     ant("rate_limit_error", "Rate limited"), QUOTA, 3e5),
    ("anthropic usage limit words", 429, {"retry-after": "3"},
     ant("rate_limit_error", "You have reached your usage limit for this plan"), QUOTA, 3.0),
    ("codex usage_limit_reached", 429, {},
     {"error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                "resets_in_seconds": 3000}}, QUOTA, None),
    ("codex rate limit, retry-after 1", 429, {"retry-after": "1"},
     {"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached, please retry"}}, RATE_LIMIT, 1.0),
    ("a long retry-after", 429, {"retry-after": "1800"}, oai("rate_limit_exceeded", "Rate limit reached"),
     QUOTA, 1800.0),
    ("overloaded: the route's, no triage", 429, {}, ant("overloaded_error", "Overloaded"), None, None),
    ("401: no triage", 401, {}, oai("invalid_api_key", "Incorrect API key"), None, None),
    ("500: no triage", 500, {}, oai("server_error", "internal error"), None, None),
]


@pytest.mark.parametrize(("name", "status", "headers", "body", "kind", "wait"), TABLE, ids=[t[0] for t in TABLE])
def test_triage_table(name, status, headers, body, kind, wait) -> None:
    v = judge(answer(status, headers, body), NOW, pool="anthropic" if "anthropic" in name else "openai-api")
    assert v.triage == kind, name
    if wait is None:
        assert v.wait is None
    else:
        assert v.wait == pytest.approx(wait, abs=1.0)


def test_the_bench_stays_the_floored_reset_while_the_wait_is_what_was_said() -> None:
    v = judge(answer(429, {"retry-after": "1"}, oai("rate_limit_exceeded", "Rate limit reached")), NOW)
    assert v.wait == 1.0 and v.reset_at == NOW + 5.0      # policy.BENCH_FLOOR


@pytest.mark.parametrize(("kind", "wait", "max_wait", "paced"), [
    (RATE_LIMIT, 1.0, 2.0, True), (RATE_LIMIT, 2.0, 2.0, True), (RATE_LIMIT, 2.5, 2.0, False),
    (RATE_LIMIT, None, 2.0, False), (RATE_LIMIT, 1.0, 0.0, False), (QUOTA, 1.0, 2.0, False), (None, 1.0, 2.0, False)])
def test_may_pace(kind, wait, max_wait, paced) -> None:
    assert may_pace(kind, wait, max_wait) is paced


HEADER_NAMES = st.sampled_from(["retry-after", "x-ratelimit-reset-requests", "x-ratelimit-remaining-requests",
                                "anthropic-ratelimit-unified-status", "anthropic-ratelimit-unified-5h-utilization",
                                "anthropic-ratelimit-unified-5h-reset", "anthropic-ratelimit-requests-reset",
                                "x-ratelimit-reset", "Retry-After"])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([402, 429, 400, 403]), st.dictionaries(HEADER_NAMES, st.text(max_size=40), max_size=6),
       st.text(max_size=200))
def test_hostile_answers_triage_to_one_of_the_two_or_none(status, headers, text) -> None:
    v = judge(Result(status, headers, message=text, text=text), NOW, notice=lambda _m: None)
    assert v.triage in (None, RATE_LIMIT, QUOTA)
    assert v.wait is None or (v.wait >= 0 and v.wait == v.wait)
    if v.fault != "key":
        assert v.triage is None


# --- a spent quota benches and rotates at once ------------------------------------------------------

KEYS = [f"sk-test-triage-{i}-" + "x" * 24 for i in range(2)]


def client(home) -> PoolClient:
    write_store(home, make_store({"openai-api": [make_row(f"k{i}aaaa", token=KEYS[i], priority=i,
                                                          base_url="http://127.0.0.1:9/v1") for i in range(2)]}))
    pc = PoolClient(home, "openai-api", clock=lambda: NOW, env={}, use_headroom=False)
    assert pc.select() is not None
    return pc


LONG = answer(429, {"retry-after": "1800"}, oai("rate_limit_exceeded", "Rate limit reached"))


def test_a_spent_quota_rotates_at_once(tmp_home) -> None:
    pc = client(tmp_home)
    first = pc.current
    d = pc.report(LONG)
    assert d.action == ROTATED and d.selection is not None and d.selection.row_id != first.row_id


def test_control_without_triage_a_spent_quota_spends_a_same_key_retry(tmp_home, monkeypatch) -> None:
    monkeypatch.setattr(judge_mod, "triage", lambda *a, **k: (RATE_LIMIT, None))
    pc = client(tmp_home)
    d = pc.report(LONG)
    assert d.action == RETRY          # the retry a spent quota cannot use: what triage removes


def test_pace_for_floors_a_zero_wait_and_spends_the_budget() -> None:
    from store.agent.outcomes import Selection
    from store.proxy.routing.attempt import Attempt
    from store.proxy.routing.pace import PACE_FLOOR, pace_for
    v = judge(answer(429, {"retry-after": "0"}, oai("rate_limit_exceeded", "Rate limit reached")), NOW)
    a = Attempt(0, Selection("p", "r", "l", "t"), pinned=True)
    assert pace_for(a, v, 2.0) == PACE_FLOOR
    a.paced = 2.0 - PACE_FLOOR / 2               # what is left of max_wait is less than the floor
    assert pace_for(a, v, 2.0) is None
    assert pace_for(Attempt(0, Selection("p", "r", "l", "t")), v, 2.0) is None     # not pinned: no pace


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 120, allow_nan=False)), max_size=12),
       st.floats(0, 60, allow_nan=False))
def test_a_request_never_paces_past_max_wait_in_all(waits, max_wait) -> None:
    from store.agent.outcomes import Selection, Verdict
    from store.proxy.routing.attempt import Attempt
    from store.proxy.routing.pace import pace_for
    a = Attempt(0, Selection("p", "r", "l", "t"), pinned=True)
    for w in waits:
        got = pace_for(a, Verdict("key", "rate_limit", triage=RATE_LIMIT, wait=w), max_wait)
        if got is not None:
            assert got >= 0
            a.paced += got
    assert a.paced <= max_wait
