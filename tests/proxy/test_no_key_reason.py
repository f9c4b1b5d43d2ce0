"""The reason a request got no key is built from the eligibility filters that refused each
key (#27). The reported answer: an upstream answering 500 (to two requests in a row) opens
the breaker, and the next
request was told that every credential is cooling while no key was benched. With the real
``openai`` SDK as the client."""

from __future__ import annotations

import openai
import pytest

from store.proxy.routing import eligibility
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, status_fields

pytestmark = pytest.mark.slow

DOWN = http(500, {}, {"error": {"message": "internal error", "type": "server_error"}})
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def second_answer(home, up) -> dict:
    edge_seed(home, up.url, fallback=False)
    for key in EDGE_KEYS[:2]:
        up.script(key, DOWN)
    before = status_fields(home)
    with running_chain_proxy(home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        for _ in range(2):       # two requests in a row answered 500 open the breaker (one alone does not)
            with pytest.raises(openai.InternalServerError) as first:
                c.chat.completions.create(**MSG)
            assert first.value.status_code == 500        # the upstream's own answer, passed on
        with pytest.raises(openai.APIStatusError) as second:
            c.chat.completions.create(**MSG)
    assert status_fields(home) == before                 # no key benched
    assert second.value.status_code == 503
    return second.value.body


def test_an_open_breaker_is_named_not_called_cooling(tmp_home, up) -> None:
    err = second_answer(tmp_home, up)
    assert err["type"] == "upstream_unavailable"
    assert "cooling" not in err["message"] and "upstream unavailable, circuit breaker open (2 keys)" in err["message"]


def test_control_a_breaker_counted_as_a_bench_says_cooling(tmp_home, up, monkeypatch) -> None:
    """The old rule: every refusal read as a bench. The answer then lies, as reported."""
    real = eligibility.why

    def as_benches(per_route):
        kind, parts = real((name, [(eff, eligibility.Refusal(eligibility.COOLING, r.until) if r else r)
                                   for eff, r in checks]) for name, checks in per_route)
        return kind, parts

    monkeypatch.setattr("store.proxy.edge.answers.why", as_benches)
    err = second_answer(tmp_home, up)
    assert err["type"] == "all_credentials_cooling" and "cooling" in err["message"]     # caught
