"""Budgets through a running proxy (#29), with the real ``openai`` SDK as the client: key #1
reaches its day budget and the next request goes to key #2 (control: budgets off, key #1
again); a reserve key is used only when the others are out; a pool over budget falls back,
and with no fallback the answer is a 429 naming the budget and when it resets. A budget
writes nothing to auth.json."""

from __future__ import annotations

import json

import openai
import pytest

from store.proxy.observing.stats import status_path
from tests.budgets.conftest import ask, budgets, costing
from tests.proxy.upstream import ScriptedUpstream
from tests.proxy_helpers import edge_seed, running_chain_proxy, status_fields

pytestmark = pytest.mark.slow


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        u.script(None, costing(1.0))
        yield u


def rows_used(home, up, text, n, *, keys=2, fallback=False):
    edge_seed(home, up.url, keys=keys, fallback=fallback)
    budgets(home, text)
    with running_chain_proxy(home) as p:
        return [ask(p) for _ in range(n)]


def test_key_over_its_day_budget_the_next_request_goes_to_key_two(tmp_home, up):
    got = rows_used(tmp_home, up, "openrouter:\n  key: {day: 2.00}", 4)
    assert [r for _p, r, _f in got] == ["or0edg", "or0edg", "or1edg", "or1edg"]


def test_control_budgets_off_key_one_again(tmp_home, up):
    got = rows_used(tmp_home, up, None, 4)
    assert [r for _p, r, _f in got] == ["or0edg"] * 4


def test_a_reserve_key_is_used_only_when_the_others_are_out(tmp_home, up):
    got = rows_used(tmp_home, up, "openrouter:\n  key: {day: 1.00}\n  reserve: [or0edg]", 3, keys=3)
    assert [r for _p, r, _f in got] == ["or1edg", "or2edg", "or0edg"]


def test_control_no_reserve_the_first_key_first(tmp_home, up):
    got = rows_used(tmp_home, up, "openrouter:\n  key: {day: 1.00}", 3, keys=3)
    assert [r for _p, r, _f in got] == ["or0edg", "or1edg", "or2edg"]


def test_a_pool_over_budget_falls_back_to_the_next_route(tmp_home, up):
    got = rows_used(tmp_home, up, "openrouter:\n  pool: {day: 2}", 3, fallback=True)
    assert got[:2] == [("openrouter", "or0edg", "0")] * 2
    assert got[2] == ("nous", "ns0edg", "1")


def test_no_fallback_the_answer_names_the_budget_and_its_reset(tmp_home, up):
    edge_seed(tmp_home, up.url, keys=2, fallback=False)
    budgets(tmp_home, "openrouter:\n  key: {day: 1.50}")
    before = status_fields(tmp_home)
    auth_before = json.loads(tmp_home.auth.read_bytes())
    with running_chain_proxy(tmp_home) as p:
        ask(p), ask(p), ask(p), ask(p)              # $2 on each key: both over $1.50
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        with pytest.raises(openai.RateLimitError) as over:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        status = p.server.status()
        port = p.server.port
    err = over.value.body
    assert over.value.status_code == 429 and err["type"] == "over_budget"
    assert "over budget: $1.50 a day, resets 00:00 UTC (2 keys)" in err["message"]
    retry = int(over.value.response.headers["Retry-After"])
    assert 0 < retry <= 86400
    route = status["chain"][0]
    assert route["refused"] == {"budget": 2} and route["budget"]["over"] == "over budget: every key"
    assert status_fields(tmp_home) == before            # a budget benches nothing in auth.json
    after = json.loads(tmp_home.auth.read_bytes())
    for rows in (auth_before, after):                   # request counts (written behind) the only change
        rows.pop("updated_at", None)
        for r in rows["credential_pool"]["openrouter"]:
            r.pop("request_count", None)
    assert after == auth_before
    written = json.loads(status_path(tmp_home, port).read_text())["chain"][0]["budget"]
    assert written["key"] == {"day": 1.5, "month": None}


def test_pool_budget_with_no_fallback_names_the_pool_budget(tmp_home, up):
    edge_seed(tmp_home, up.url, keys=2, fallback=False)
    budgets(tmp_home, "openrouter:\n  pool: {month: 2}")
    with running_chain_proxy(tmp_home) as p:
        ask(p), ask(p)
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        with pytest.raises(openai.RateLimitError) as over:
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert "pool over budget: $2.00 a month, resets 1 " in over.value.body["message"]
