"""A provider's error message is checked once, at the edge, before a row keeps it.

``last_error_message`` is printed by every Hermes tool on the host. A provider that echoes the
key it was sent ("Incorrect API key provided: sk-...") must not put that key in a second field
of auth.json: the row keeps the message with fingerprints for the row's own token and for any
key-shaped text. Through the agent runtime and through a running proxy, with a control that
takes the edge check away and finds the key in the store.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent import outcomes, pool_client
from store.agent.outcomes import MESSAGE_CAP, Result, stored_message
from store.agent.pool_client import PoolClient
from store.paths import Home
from store.redaction.fingerprints import fingerprint
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import CONFIG, running_chain_proxy

NOW = 1_800_000_000.0
ROW_KEY = "sk-or-v1-echoCANARYrowkey" + "8" * 24
OTHER = "sk-proj-echoCANARYother" + "9" * 24
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _home(home: Home, base_url: str | None = None) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("or0msg", token=ROW_KEY, priority=0, base_url=base_url),
        make_row("or1msg", token="sk-or-v1-spare" + "1" * 30, priority=1, base_url=base_url)]}))


def _messages(home: Home) -> list[str]:
    return [str(r.get("last_error_message")) for r in read_doc(home)["credential_pool"]["openrouter"]]


def _runtime_429(home: Home) -> None:
    client = PoolClient(home, "openrouter", clock=lambda: NOW, env={})
    client.select()
    for _ in range(2):      # Hermes retries a 429 once on the same key before it benches it
        client.report(Result(429, message=f"Rate limit for key {ROW_KEY} (also seen: {OTHER}); retry in 20s"))


def test_the_runtime_keeps_the_providers_message_with_fingerprints(tmp_home: Home) -> None:
    _home(tmp_home)
    _runtime_429(tmp_home)
    kept = _messages(tmp_home)[0]
    assert ROW_KEY not in kept and OTHER not in kept and "echoCANARY" not in kept
    assert fingerprint(ROW_KEY) in kept and "retry in 20s" in kept


def test_control_without_the_edge_check_the_echoed_key_lands_in_the_store(tmp_home: Home, monkeypatch) -> None:
    monkeypatch.setattr(pool_client, "stored_message", lambda message, *secrets: message)
    _home(tmp_home)
    _runtime_429(tmp_home)
    assert ROW_KEY in _messages(tmp_home)[0]


def _through_the_proxy(tmp_home: Home) -> str:
    with ScriptedUpstream() as up:
        _home(tmp_home, up.url + "/api/v1")
        tmp_home.config.write_text(CONFIG.split("fallback_providers")[0])
        echo = {"error": {"message": f"Rate limit reached for key {ROW_KEY}", "type": "rate_limit_error"}}
        up.script(ROW_KEY, http(429, {"Retry-After": "60"}, echo))
        with running_chain_proxy(tmp_home) as p:
            got = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
    assert got.status_code == 200          # the spare key served
    return tmp_home.auth.read_text()


@pytest.mark.slow
def test_a_key_echoed_through_the_proxy_never_reaches_auth_json(tmp_home: Home) -> None:
    raw = _through_the_proxy(tmp_home)
    assert raw.count(ROW_KEY) == 1         # as the row's own access_token, once
    assert fingerprint(ROW_KEY) in _messages(tmp_home)[0]


@pytest.mark.slow
def test_control_a_proxy_without_the_edge_check_writes_the_echoed_key(tmp_home: Home, monkeypatch) -> None:
    monkeypatch.setattr(pool_client, "stored_message", lambda message, *secrets: message)
    assert _through_the_proxy(tmp_home).count(ROW_KEY) == 2


@settings(max_examples=200, deadline=None)
@given(before=st.text(max_size=200), after=st.text(max_size=200))
def test_any_message_around_a_key_keeps_no_key_and_stays_within_the_cap(before: str, after: str) -> None:
    # The row's own key goes by value, glued to anything; another key by its shape, which
    # starts a token (so "task-..." is never taken for "sk-...").
    kept = stored_message(before + ROW_KEY + after + " " + OTHER, ROW_KEY)
    assert kept is not None and ROW_KEY not in kept and OTHER not in kept and len(kept) <= MESSAGE_CAP
    assert outcomes.stored_message(None) is None and stored_message("") is None
