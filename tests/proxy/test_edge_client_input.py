"""What a client sends is bounded and its keys never shown (issue 27):

- a model name over 256 characters, or one with control characters, is refused at the
  door with a 400 naming ``model``, in the protocol's error shape, before anything goes
  upstream (hypothesis: hostile names; control: the door check off, the name goes upstream);
- a storm of distinct model names, each answered 429, cannot grow auth.json past a small
  bound: ``model_cooldowns`` keeps a fixed number of models per row (control: no cap);
- a client key in a malformed ``Authorization`` line is masked in the answer and the log,
  as is any key-shaped text there (control: the redactor without the client keys).
"""

from __future__ import annotations

import json
import logging
import socket

import anthropic
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.pools import model_cooldowns
from store.proxy.edge import door, redacting
from store.proxy.edge.inbound import Gate
from store.redaction import redact
from store.redaction.fingerprints import fingerprint
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import edge_seed, running_chain_proxy

pytestmark = pytest.mark.slow
SONNET = "claude-sonnet-4-5"
ANT_KEYS = ["sk-ant-api03-stormtest-" + c * 40 for c in "AB"]
CLIENT_KEY = "hermes-client-CANARY-q7w8e9r0t1y2u3i4"


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


# --- the model name at the door -------------------------------------------------------------

BAD_NAMES = st.one_of(
    st.text(min_size=257, max_size=400),
    st.builds(lambda a, c, b: a + c + b, st.text(max_size=20), st.sampled_from(["\x00", "\n", "\x1b", "\x7f",
                                                                                 "\u0085", "\r"]),
              st.text(max_size=20)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=BAD_NAMES)
def test_a_hostile_model_name_is_refused_at_the_door(tmp_home, up, name) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.reset_script()
    with running_chain_proxy(tmp_home) as p:
        chat = httpx.post(p.url + "/chat/completions", timeout=20, json={"model": name, "messages": []})
        msgs = httpx.post(p.url + "/messages", timeout=20, json={"model": name, "max_tokens": 1, "messages": []})
    assert chat.status_code == 400 and msgs.status_code == 400
    err = chat.json()["error"]
    assert err["param"] == "model" and "model" in err["message"] and err["type"] == "invalid_model"
    body = msgs.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "model" in body["error"]["message"]
    assert up.seen == []                         # nothing was forwarded


def test_a_fine_model_name_and_a_nested_long_one_pass(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    body = {"model": "m" * 256, "messages": [], "metadata": {"note": '"model": "' + "x" * 300 + '"'}}
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", timeout=20, json=body)
    assert r.status_code == 200 and len(up.seen) == 1


def test_control_without_the_door_check_the_name_goes_upstream(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(door, "bad_model", lambda body, model=None: None)
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "x" * 300, "messages": []})
    assert r.status_code == 200 and len(up.seen) == 1


# --- a storm of model names -------------------------------------------------------------------

RATE_LIMITED = http(429, {"retry-after": "600"}, {"type": "error", "error": {
    "type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})


def _storm(home, up, n: int) -> int:
    write_store(home, make_store({"anthropic": [make_row(f"an{i}stm", token=k, priority=i, base_url=up.url)
                                                for i, k in enumerate(ANT_KEYS)]}))
    home.config.write_text(f"model:\n  provider: anthropic\n  default: {SONNET}\n")
    up.script(None, RATE_LIMITED)
    start = home.auth.stat().st_size
    with running_chain_proxy(home, primary="anthropic") as p:
        c = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=20)
        for i in range(n):
            with pytest.raises(anthropic.APIStatusError):
                c.messages.create(model=f"storm-{i:04d}-" + "x" * 240, max_tokens=1, messages=[])
    return home.auth.stat().st_size - start


def test_a_storm_of_model_names_cannot_grow_the_store_past_a_small_bound(tmp_home, up) -> None:
    grown = _storm(tmp_home, up, 160)
    doc = json.loads(tmp_home.auth.read_text())
    for row in doc["credential_pool"]["anthropic"]:
        assert len(row["model_cooldowns"]) == model_cooldowns.MAX_MODELS
        assert set(row["model_cooldowns"]) == set(row["model_cooldown_observed_at"])
        assert "storm-0159-" + "x" * 240 in row["model_cooldowns"]      # the newest is kept
    bound = len(ANT_KEYS) * model_cooldowns.MAX_MODELS * 2 * 300
    assert grown < bound


def test_control_without_the_cap_the_store_grows_with_the_storm(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(model_cooldowns, "MAX_MODELS", 10**6)
    grown = _storm(tmp_home, up, 60)
    doc = json.loads(tmp_home.auth.read_text())
    assert all(len(r["model_cooldowns"]) == 60 for r in doc["credential_pool"]["anthropic"])
    assert grown > len(ANT_KEYS) * 60 * 2 * 250


# --- a client key in a bad header ---------------------------------------------------------------

def _raw(port: int, line: bytes) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + line + b"\r\nContent-Length: 2\r\n\r\n{}")
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        pass
    finally:
        s.close()
    return data


BAD_LINES = [b"Authorization: Bearer %s\x01x", b"Authorization Bearer %s", b"Authorization: Bearer\x00%s"]
SHAPED = "sk-or-v1-inboundshape-" + "9" * 30


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def _answers(home, up) -> str:
    edge_seed(home, up.url, fallback=False)
    shown = []
    with running_chain_proxy(home, gate=Gate([CLIENT_KEY.encode()])) as p:
        for line in BAD_LINES:
            for key in (CLIENT_KEY, SHAPED):
                shown.append(_raw(p.server.port, line % key.encode()).decode("latin-1"))
    return "\n".join(shown)


def test_a_client_key_in_a_malformed_header_is_never_echoed_or_logged(tmp_home, up, logs) -> None:
    answers = _answers(tmp_home, up)
    logged = "\n".join(r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "")
                       for r in logs.records)
    assert answers.count("HTTP/1.") == len(BAD_LINES) * 2 and "400" in answers
    assert CLIENT_KEY not in answers and SHAPED not in answers
    assert CLIENT_KEY not in logged and SHAPED not in logged
    assert "Error handling request" in logged or "malformed" in logged     # it was logged, redacted


def test_control_the_redactor_without_client_keys_echoes_one(tmp_home, up, logs, monkeypatch) -> None:
    monkeypatch.setattr(redacting.ProxySecrets, "client_keys", lambda self: ())
    monkeypatch.setattr(redact, "mask_auth_values", lambda text: text)
    answers = _answers(tmp_home, up)
    assert CLIENT_KEY in answers


def test_a_crash_quoting_a_client_key_shows_a_fingerprint(tmp_home, up, logs, monkeypatch) -> None:
    async def crash(*a, **k):
        raise RuntimeError(f"boom with {CLIENT_KEY} in hand")

    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home, gate=Gate([CLIENT_KEY.encode()])) as p:
        monkeypatch.setattr(p.server.forwarder, "forward", crash)
        r = httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "m", "messages": []},
                       headers={"Authorization": f"Bearer {CLIENT_KEY}"})
    logged = "\n".join(rec.getMessage() for rec in logs.records)
    assert r.status_code == 500 and CLIENT_KEY not in r.text
    assert "boom with" in logged and CLIENT_KEY not in logged and fingerprint(CLIENT_KEY) in logged
