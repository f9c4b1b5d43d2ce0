"""A per-model bench the proxy writes, read by the pool code on both sides of it.

The proxy serves an ``anthropic`` pool; a 429 on one model benches that (row, model) pair
in ``model_cooldowns`` (spec section 3), the form newer Hermes writes. Then:

- newer Hermes's reading (hermes-admin's pool code, which follows it: ``policy`` and
  ``hermes-admin list``) sees a bench for that model only: the row is not selectable for
  it, and the other model still selects it first;
- the real Hermes 0.19.0 (spec section 9; it predates per-model cooldowns) loads the file
  cleanly and still selects the row, and its own write drops the field it does not know.
  Both are asserted as the known limit of 0.19.0, so a change on either side is noticed.

The control: a 429 that benches the whole key (the model rule removed) leaves the other
model without the row, in our pool code and in Hermes's.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from store.agent import judge as judge_mod
from store.pools import policy
from tests.conftest import make_row, make_store, read_doc, run_cli, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import running_chain_proxy

pytestmark = [pytest.mark.hermes, pytest.mark.slow]

KEYS = ["sk-ant-api03-interopbench-" + c * 40 for c in "AB"]
SONNET, HAIKU = "claude-sonnet-4-5", "claude-haiku-4-5"
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": SONNET,
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 1, "output_tokens": 1}}
LIMITED = http(429, {}, {"type": "error", "error": {"type": "rate_limit_error",
                                                    "message": "This request would exceed your rate limit"}})


def _bench_through_the_proxy(home) -> None:
    """Two anthropic keys; a SONNET request whose first key answers 429 twice."""
    with ScriptedUpstream() as up:
        write_store(home, make_store({"anthropic": [
            make_row("an0aaa", label="first", priority=0, token=KEYS[0], base_url=up.url),
            make_row("an1bbb", label="second", priority=1, token=KEYS[1], base_url=up.url)]}))
        home.config.write_text("model:\n  provider: anthropic\n")
        up.script(KEYS[0], LIMITED, LIMITED, http(200, {}, MESSAGE))
        up.script(KEYS[1], http(200, {}, MESSAGE))
        with running_chain_proxy(home, primary="anthropic") as p:
            r = httpx.post(p.url + "/messages", timeout=30, headers={"anthropic-version": "2023-06-01"},
                           json={"model": SONNET, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200 and r.headers["x-hermes-credential"] == "an1bbb"


def test_the_proxys_model_bench_is_a_model_bench_for_the_pool_code(tmp_home, hermes) -> None:
    _bench_through_the_proxy(tmp_home)
    rows = read_doc(tmp_home)["credential_pool"]["anthropic"]
    now = time.time()
    # Newer Hermes's reading: benched for SONNET only, the key healthy.
    assert rows[0]["last_status"] is None and set(rows[0]["model_cooldowns"]) == {SONNET}
    assert policy.effective(rows[0], rows, now).model_benches.keys() == {SONNET}
    assert [r["id"] for r in policy.available(rows, now, model=SONNET)] == ["an1bbb"]
    assert policy.pick(rows, "fill_first", now, model=HAIKU)["id"] == "an0aaa"
    listed = json.loads(run_cli(tmp_home, "list", "anthropic", "--json").stdout)
    shown = {c["id"]: c for c in listed["pools"]["anthropic"]["credentials"]}
    assert set(shown["an0aaa"]["model_cooldowns"]) == {SONNET}
    # The real Hermes 0.19.0: the file loads, and the other model (any model: 0.19.0 has no
    # per-model benches) still gets the row first.
    assert [e["id"] for e in hermes.entries("anthropic")] == ["an0aaa", "an1bbb"]
    assert hermes.select("anthropic")["id"] == "an0aaa"
    # Known limit of 0.19.0: when it writes the pool it keeps only the fields it knows.
    hermes.hold("anthropic")
    hermes.persist_held("anthropic")
    assert "model_cooldowns" not in read_doc(tmp_home)["credential_pool"]["anthropic"][0]


def test_control_a_whole_key_bench_takes_the_row_from_the_other_model_too(tmp_home, hermes, monkeypatch) -> None:
    monkeypatch.setattr(judge_mod, "model_scoped", lambda *a: False)
    _bench_through_the_proxy(tmp_home)
    rows = read_doc(tmp_home)["credential_pool"]["anthropic"]
    now = time.time()
    assert rows[0]["last_status"] == "exhausted" and "model_cooldowns" not in rows[0]
    assert policy.pick(rows, "fill_first", now, model=HAIKU)["id"] == "an1bbb"
    assert hermes.select("anthropic")["id"] == "an1bbb"
