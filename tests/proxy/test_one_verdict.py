"""One verdict per answer (#27): the in-memory view and auth.json hold the same bench for
the same answer, token counting is limited apart from Messages, and the table test: the
same scripted answers through the one reader give the same verdict everywhere it is used.
With the real ``anthropic`` SDK as the client."""

from __future__ import annotations

import anthropic
import pytest

from store.agent import judge as judge_mod
from store.agent.judge import judge
from store.agent.outcomes import COUNT_TOKENS, KEY, ROUTE, Result
from store.agent.pool_client import PoolClient
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow

KEYS = ["sk-ant-api03-verdicttest-" + c * 40 for c in "AB"]
SONNET = "claude-sonnet-4-5"
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": SONNET,
           "content": [{"type": "text", "text": "ok (scripted)"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
# Retry-After says 30 s; the window's own reset says 90 s later (RFC 3339, far from "now").
DISAGREE = {"retry-after": "30", "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"}


def _429(message: str) -> object:
    return http(429, DISAGREE, {"type": "error", "error": {"type": "rate_limit_error", "message": message}})


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def seed(home, base: str, keys: int = 2) -> None:
    write_store(home, make_store({"anthropic": [make_row(f"an{i}key", token=KEYS[i], priority=i, base_url=base)
                                                for i in range(keys)]}))
    home.config.write_text(f"model:\n  provider: anthropic\n  default: {SONNET}\n")


def client(p) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30)


def create(p):
    return client(p).messages.create(model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])


def test_a_key_bench_ends_at_the_same_moment_in_memory_and_in_auth_json(tmp_home, up) -> None:
    """A usage limit (the key's, not the model's) whose Retry-After and window reset
    disagree: one reset (Retry-After's), stamped once, in the view and in the store."""
    seed(tmp_home, up.url)
    up.script(KEYS[0], _429("You have reached your usage limit for this plan"))
    up.script(KEYS[1], http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        assert create(p).content[0].text == "ok (scripted)"
        memory = dict(p.chain._rows["anthropic"][0])
    stored = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert stored["last_status"] == memory["last_status"] == "exhausted"
    assert memory["last_error_reset_at"] == stored["last_error_reset_at"]
    assert memory["last_status_at"] == stored["last_status_at"]
    assert stored["last_error_reset_at"] - stored["last_status_at"] == pytest.approx(30, abs=1e-6)


def test_a_model_bench_ends_at_the_same_moment_in_memory_and_in_auth_json(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(KEYS[0], _429("Number of request tokens has exceeded your per-minute rate limit"))
    up.script(KEYS[1], http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
        memory = dict(p.chain._rows["anthropic"][0])
    stored = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert stored["model_cooldowns"] == memory["model_cooldowns"] and SONNET in stored["model_cooldowns"]
    assert stored.get("last_status") is None           # the model's limit, not the key's


def test_a_429_on_count_tokens_does_not_bench_the_model_for_messages(tmp_home, up) -> None:
    seed(tmp_home, up.url, keys=1)
    limited = _429("Number of request tokens has exceeded your per-minute rate limit")
    up.script(KEYS[0], limited, limited, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError):
            client(p).messages.count_tokens(model=SONNET, messages=[{"role": "user", "content": "hi"}])
        msg = create(p)                                  # Messages on the same model and key: served
    assert msg.content[0].text == "ok (scripted)"
    cooldowns = read_doc(tmp_home)["credential_pool"]["anthropic"][0]["model_cooldowns"]
    assert set(cooldowns) == {f"{COUNT_TOKENS}:{SONNET}"}


def test_control_without_the_endpoint_scope_count_tokens_benches_messages(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(judge_mod, "endpoint_of", lambda path: None)
    from store.proxy import forward
    monkeypatch.setattr(forward, "endpoint_of", lambda path: None)
    seed(tmp_home, up.url, keys=1)
    limited = _429("Number of request tokens has exceeded your per-minute rate limit")
    up.script(KEYS[0], limited, limited, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError):
            client(p).messages.count_tokens(model=SONNET, messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(anthropic.APIStatusError):
            create(p)                                    # caught: the old answer, a 503
    assert set(read_doc(tmp_home)["credential_pool"]["anthropic"][0]["model_cooldowns"]) == {SONNET}


# --- the table: one reader, the same verdict for every consumer ----------------------------------

NOW = 1_800_000_000.0
TABLE = [
    # (status, headers, body message, per_model_429, fault, kind, reset from now, model scoped)
    (429, DISAGREE, "rate limited", True, KEY, "rate_limit", 30.0, True),
    (429, {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-limit": "5",
           "anthropic-ratelimit-requests-reset": "2027-01-15T08:01:30Z"}, "rate limited", True, KEY,
     "rate_limit", 90.0, True),
    (429, {"x-ratelimit-reset-requests": "6m0s"}, "Rate limit reached for gpt-5 on tokens", False, KEY,
     "rate_limit", 360.0, True),
    (429, {"retry-after": "0"}, "slow down", False, KEY, "rate_limit", 5.0, False),     # the floor
    (503, {"retry-after": "10"}, "overloaded", False, ROUTE, "overloaded", 10.0, False),
]


@pytest.mark.parametrize("status,headers,message,per_model,fault,kind,after,scoped", TABLE)
def test_one_reader_one_verdict(status, headers, message, per_model, fault, kind, after, scoped) -> None:
    model = "gpt-5" if not per_model else SONNET
    result = Result(status, headers, message=message)
    v = judge(result, NOW, model=model, per_model_429=per_model)
    assert (v.fault, v.kind, v.model_scoped) == (fault, kind, scoped)
    assert v.reset_at == pytest.approx(NOW + after)
    assert v.read_at == NOW and v.scope == (model if scoped else None)
    # the same answer for the endpoint that is limited apart
    assert judge(result, NOW, model=model, per_model_429=per_model, endpoint=COUNT_TOKENS).scope == \
        (f"{COUNT_TOKENS}:{model}" if scoped else None)


def test_the_pool_client_takes_the_verdict_it_is_handed(tmp_home, monkeypatch) -> None:
    """Handed a verdict, the agent's rules never judge the answer again (one judgement)."""
    seed(tmp_home, "http://127.0.0.1:9")
    c = PoolClient(tmp_home, "anthropic", clock=lambda: NOW + 1, env={})
    c.select()
    verdict = judge(Result(402, message="credit balance too low"), NOW)
    calls = []
    monkeypatch.setattr(judge_mod, "classify", lambda *a, **k: calls.append(a))
    c.report(Result(402, message="credit balance too low"), verdict)
    row = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert calls == [] and row["last_status"] == "exhausted" and row["last_status_at"] == NOW


def test_a_success_verdict_keeps_its_usage_and_says_when_nothing_is_left() -> None:
    from store.dialects import anthropic as anthropic_dialect
    from store.dialects.readings import Usage
    from store.dialects.registry import read_headers

    body = b'{"id": "msg_01", "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 7}}'
    readings = read_headers({"anthropic-ratelimit-requests-limit": "5", "anthropic-ratelimit-requests-remaining": "0",
                             "anthropic-ratelimit-requests-reset": "2027-01-15T08:01:30Z"}, NOW)
    v = judge_mod.judge_success(NOW, readings, dialect=anthropic_dialect.DIALECT, body=body)
    assert v.fault is None and v.usage == Usage(10, 2, 7) and v.exhausted_until == NOW + 90   # 3 + 7 cached
    assert judge_mod.judge_success(NOW, (), dialect=anthropic_dialect.DIALECT, body=b"not json").usage is None


def _count_records(monkeypatch) -> list:
    from store.agent.headroom import Headroom

    calls: list = []
    real = Headroom.record

    def record(self, *a, **k):
        calls.append(a[:2])
        return real(self, *a, **k)

    monkeypatch.setattr(Headroom, "record", record)
    return calls


LIMITED_WITH_READINGS = http(429, {"retry-after": "30", "anthropic-ratelimit-requests-limit": "50",
                                   "anthropic-ratelimit-requests-remaining": "0",
                                   "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"},
                             {"type": "error", "error": {"type": "rate_limit_error", "message": "usage limit reached"}})


def test_each_answers_readings_are_recorded_once(tmp_home, up, monkeypatch) -> None:
    calls = _count_records(monkeypatch)
    seed(tmp_home, up.url)
    up.script(KEYS[0], LIMITED_WITH_READINGS)
    up.script(KEYS[1], http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
    assert up.hits(KEYS[0]) == 1 and calls == [("anthropic", "an0key")]     # one answer, one record


def test_control_a_pool_client_that_records_again_is_caught(tmp_home, up, monkeypatch) -> None:
    from store.proxy.routing.request_client import RequestClient

    calls = _count_records(monkeypatch)
    monkeypatch.setattr(RequestClient, "report", lambda self, result, verdict:
                        self.pool_client.report(result, verdict, recorded=False))
    seed(tmp_home, up.url)
    up.script(KEYS[0], LIMITED_WITH_READINGS)
    up.script(KEYS[1], http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        create(p)
    assert calls == [("anthropic", "an0key")] * 2          # caught: the same answer recorded twice
