"""An operator's reset lifts the proxy's headroom hold too (docs/proxy.md, "An operator's
reset comes first").

Every primary key answers 200 saying nothing is left for 5 minutes: the proxy holds them in
memory (and benches them in auth.json). The provider recovers and the operator runs
``hermes-admin reset``: auth.json is clean, yet the proxy still refused the keys ("held by
headroom, its provider said nothing is left") or sent the request to the fallback, until
the provider's 5 minutes were up. A reset the proxy sees in the store (``status_cleared_at``)
now says the readings taken before it hold nothing. With the real ``openai`` SDK as client.
"""

from __future__ import annotations

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.agent.headroom import hold
from store.agent.outcomes import Selection
from store.config import settings as settings_file
from store.dialects.readings import Reading
from store.paths import Home
from store.proxy.routing.headroom_gate import HeadroomGate
from tests.conftest import read_doc, run_cli
from tests.proxy_helpers import OR_KEYS, running_proxy, seed, wait_until
from tui.demo.fake_provider import FakeProvider, Quota

pytestmark = pytest.mark.slow
MSG = [{"role": "user", "content": "hi"}]
IDS = ["or0aaa", "or1aaa", "or2aaa"]


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


def _rows(home: Home) -> list[dict]:
    return read_doc(home)["credential_pool"]["openrouter"]


def _all_out_for_five_minutes(home: Home, fake: FakeProvider, p, client: openai.OpenAI) -> None:
    for key in OR_KEYS:
        fake.quota(key, Quota(limit=1, window=300, dialect="openai"))
    served = [client.chat.completions.with_raw_response.create(model="m", messages=MSG) for _ in range(3)]
    assert sorted(r.headers["x-hermes-credential"] for r in served) == IDS     # each: nothing left for 5 min
    wait_until(lambda: all(r.get("last_status") == "exhausted" for r in _rows(home)), 10,
               "the headroom benches in auth.json")
    for key in OR_KEYS:                                          # the provider recovers
        fake.quota(key, Quota(limit=10_000, window=60, dialect="openai"))


def _reset(home: Home, p) -> None:
    run_cli(home, "reset", "openrouter", "--yes")
    assert all(r.get("last_status") is None and r.get("status_cleared_at") for r in _rows(home))
    wait_until(lambda: all(r.get("status_cleared_at") for r in
                           (p.chain.last_doc.get("credential_pool") or {}).get("openrouter") or []),
               10, "the proxy's view to show the reset")


def test_after_a_reset_the_next_request_goes_back_to_the_primary(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    with running_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        _all_out_for_five_minutes(tmp_home, fake, p, c)
        assert c.chat.completions.with_raw_response.create(model="m", messages=MSG).headers["x-hermes-pool"] == "nous"
        _reset(tmp_home, p)
        r = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert r.headers["x-hermes-pool"] == "openrouter", "the reset did not lift the headroom hold"
        assert r.headers["x-hermes-fallback"] == "0"


def test_after_a_reset_a_lone_pool_serves_instead_of_a_503(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    tmp_home.config.write_text("model:\n  provider: openrouter\n")       # no fallback
    with running_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
        _all_out_for_five_minutes(tmp_home, fake, p, c)
        with pytest.raises(openai.APIStatusError) as info:
            c.chat.completions.create(model="m", messages=MSG)
        assert info.value.status_code == 503
        _reset(tmp_home, p)
        r = c.chat.completions.with_raw_response.create(model="m", messages=MSG)
        assert r.http_response.status_code == 200 and r.headers["x-hermes-credential"] in IDS
        # What the provider says after the reset holds again: the reset lifts old readings only.
        for key in OR_KEYS:
            fake.quota(key, Quota(limit=1, window=300, dialect="openai"))
        for _ in range(3):
            c.chat.completions.create(model="m", messages=MSG)
        with pytest.raises(openai.APIStatusError) as again:
            c.chat.completions.create(model="m", messages=MSG)
        assert again.value.status_code == 503


# --- the rule, on the gate alone ------------------------------------------------------------

T = 1_800_000_000.0
TOKEN = "sk-or-v1-" + "7" * 40
SEL = Selection("openrouter", "a1", "", TOKEN)
ROW = {"id": "a1", "access_token": TOKEN}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 100), st.sampled_from(["requests", "tokens"]), st.integers(0, 3)),
                min_size=1, max_size=6),
       st.floats(0, 100))
def test_a_reset_lifts_exactly_what_readings_before_it_held(tmp_home, answers, reset_after) -> None:
    """Any answers before and after a reset at T+*reset_after*: the gate holds the row as the
    readings taken after the reset alone would, whatever came before."""
    clock = [T]
    gate = HeadroomGate(tmp_home, lambda: clock[0], settings=settings_file.DEFAULTS)   # no IO: nothing flushed
    stamp = T + reset_after
    said = []
    for at, window, left in sorted(answers):
        clock[0] = T + at
        r = Reading(window, "openai", T + at, limit=3, remaining=left, reset_at=T + at + 300)
        gate.observe(SEL, (r,))
        said.append(r)
    clock[0] = max(clock[0], stamp)
    gate.cleared({"openrouter": [dict(ROW, status_cleared_at=stamp)]})
    now = clock[0]
    after = {r.window: r for r in said if r.read_at > stamp}     # the newest per window, after the reset
    want = hold(after.values(), now)
    got = gate.exhausted_until("openrouter", ROW, now, {})
    assert got == (want.until if want is not None and want.exhausted else None)
    assert gate.cleared({"openrouter": [dict(ROW, status_cleared_at=stamp)]}) is None   # the same reset: no-op
