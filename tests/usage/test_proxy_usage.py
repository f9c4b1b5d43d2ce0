"""Through a running proxy (#29): the real openai and anthropic SDKs, the ledger and
``usage --json`` show what the scripted upstream reported, per key; the client's stream is
byte-identical to the upstream's; costs are actual, estimated, included or unknown; a
locked, corrupt or removed ledger is a notice and the proxy serves on."""

from __future__ import annotations

import json
import logging
import os
import sqlite3

import anthropic
import httpx
import openai
import pytest

from store.usage.ledger import ledger_path
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import http, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow
MSG = [{"role": "user", "content": "hi"}]
SONNET = "claude-sonnet-4-5"
ANT_KEY = "sk-ant-api03-usagetest-" + "U" * 40
ANT_OAUTH = "sk-ant-oat01-usagetest-" + "O" * 40
OAI_KEY = "sk-proj-usagetest-" + "P" * 40


def _sse(data: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


def _chunk(text: str | None, usage: dict | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "openai/gpt-4o",
            "choices": [] if text is None else [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    if usage is not None:
        body["usage"] = usage
    return _sse(body)


def settled(p) -> None:
    """Every answer handed to the feed has reached the ledger (bounded)."""
    spend = p.server.forwarder.spend
    p.settled()               # a success's verdict (and its usage) is handed on after the answer
    assert spend.wait_idle(10)
    wait_until(lambda: spend.ledger.pending == 0 and spend.ledger.written + spend.ledger.dropped >= spend.feed.fed,
               what="the ledger's writes")


def usage_json(home, *argv: str) -> dict:
    code, out, err = run_main(["usage", "--home", str(home.root), "--json", *argv], b"")
    assert code == 0, err
    return json.loads(out)["pools"]


def usage_json_doc(home) -> dict:
    return json.loads(run_main(["usage", "--home", str(home.root), "--json"], b"")[1])


def ledger_rows(home) -> list[tuple]:
    with sqlite3.connect(ledger_path(home.root)) as c:
        return c.execute("SELECT pool, row_id, model, input_tokens, output_tokens, cache_read_tokens, "
                         "reasoning_tokens, cost_usd, cost_status, partial FROM requests ORDER BY at").fetchall()


def test_openai_chat_stream_with_include_usage_openrouter_cost_is_actual(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    usage = {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30, "cost": 0.000321,
             "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 2}}
    chunks = [_chunk("hel"), _chunk("lo"), _chunk(None, usage), _sse(b"[DONE]")]
    up.script(EDGE_KEYS[0], stream(chunks, every=0.01), stream(chunks, every=0.01))
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
        got = list(c.chat.completions.create(model="openai/gpt-4o", messages=MSG, stream=True,
                                             stream_options={"include_usage": True}))
        assert got[-1].usage.prompt_tokens == 21
        raw = httpx.post(p.url + "/chat/completions", timeout=20,
                         json={"model": "openai/gpt-4o", "messages": MSG, "stream": True,
                               "stream_options": {"include_usage": True}})
        settled(p)
    assert raw.content == b"".join(chunks)                   # byte-identical to the upstream's
    assert all(b'"include_usage": true' in s.body.replace(b'":true', b'": true') for s in up.seen)  # as sent
    cred = usage_json(tmp_home)["openrouter"]["credentials"][0]
    assert cred["id"] == "or0edg" and cred["requests"] == 2 and cred["input_tokens"] == 42
    assert cred["output_tokens"] == 18 and cred["cache_read_tokens"] == 8 and cred["reasoning_tokens"] == 4
    assert cred["cost_status"] == "actual" and cred["cost_usd"] == pytest.approx(0.000642)


def test_the_proxy_adds_no_include_usage_and_a_stream_without_it_records_a_request(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    chunks = [_chunk("hi"), _sse(b"[DONE]")]
    up.script(EDGE_KEYS[0], stream(chunks))
    with running_chain_proxy(tmp_home) as p:
        raw = httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "m", "messages": MSG, "stream": True})
        settled(p)
    assert raw.content == b"".join(chunks) and b"include_usage" not in up.seen[0].body
    assert ledger_rows(tmp_home) == [("openrouter", "or0edg", "m", None, None, None, None, None, "unknown", 0)]


def _openai_home(home, base: str, *rows: dict) -> None:
    write_store(home, make_store({"openai-api": list(rows) or [make_row("oa0use", token=OAI_KEY, base_url=base)]}))
    home.config.write_text("model:\n  provider: openai-api\n  default: gpt-4o\n")


RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o",
            "output": [{"type": "message", "id": "m1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": 1000, "output_tokens": 500, "total_tokens": 1500,
                      "input_tokens_details": {"cached_tokens": 200},
                      "output_tokens_details": {"reasoning_tokens": 50}}}


def test_responses_streamed_and_not_a_priced_model_is_estimated_with_the_table_version(tmp_home, up) -> None:
    _openai_home(tmp_home, up.url + "/v1")
    events = [_sse({"type": "response.created", "sequence_number": 0,
                    "response": {**RESPONSE, "status": "in_progress", "output": [], "usage": None}},
                   "response.created"),
              _sse({"type": "response.completed", "sequence_number": 1, "response": RESPONSE}, "response.completed")]
    up.script(OAI_KEY, http(200, body=RESPONSE), stream(events, every=0.01))
    with running_chain_proxy(tmp_home, primary="openai-api") as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
        assert c.responses.create(model="gpt-4o", input="hi").usage.input_tokens == 1000
        done = [e for e in c.responses.create(model="gpt-4o", input="hi", stream=True)
                if e.type == "response.completed"]
        assert done and done[0].response.usage.output_tokens == 500
        settled(p)
    rows = ledger_rows(tmp_home)
    assert [r[:7] for r in rows] == [("openai-api", "oa0use", "gpt-4o", 1000, 500, 200, 50)] * 2
    cred = usage_json(tmp_home)["openai-api"]["credentials"][0]
    assert cred["cost_status"] == "estimated" and cred["cost_usd"] == pytest.approx(2 * 0.00725)
    code, out, _ = run_main(["usage", "--home", str(tmp_home.root)], b"")
    assert "~$0.01" in out and "estimated" in out and "estimates (~): genai-prices 0.2.3" in out
    assert usage_json_doc(tmp_home)["prices"] == {"table": "genai-prices 0.2.3", "own": []}


def _anthropic_home(home, base: str) -> None:
    write_store(home, make_store({"anthropic": [
        make_row("an0key", token=ANT_KEY, base_url=base, priority=0),
        make_row("an1sub", token=ANT_OAUTH, base_url=base, priority=1, auth_type="oauth")]}))
    home.config.write_text(f"model:\n  provider: anthropic\n  default: {SONNET}\n")


ANT_STREAM = [
    _sse({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": SONNET, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 100,
                                         "cache_creation_input_tokens": 7}}}, "message_start"),
    _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
         "content_block_start"),
    _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
         "content_block_delta"),
    _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
    _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
          "usage": {"output_tokens": 15}}, "message_delta"),
    _sse({"type": "message_stop"}, "message_stop"),
]


def _ant_stream(p):
    c = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=20)
    with c.messages.stream(model=SONNET, max_tokens=16, messages=MSG) as s:
        for _ in s:
            pass
        return s.get_final_message()


def test_anthropic_messages_stream_api_key_estimated_and_a_subscription_row_included(tmp_home, up) -> None:
    _anthropic_home(tmp_home, up.url)
    up.script(ANT_KEY, stream(ANT_STREAM, every=0.01))
    up.script(None, stream(ANT_STREAM, every=0.01))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        assert _ant_stream(p).usage.output_tokens == 15
        raw = httpx.post(p.url + "/messages", timeout=20, headers={"anthropic-version": "2023-06-01"},
                         json={"model": SONNET, "max_tokens": 16, "messages": MSG, "stream": True})
        settled(p)
    assert raw.content == b"".join(ANT_STREAM)
    creds = {c["id"]: c for c in usage_json(tmp_home)["anthropic"]["credentials"]}
    used = [c for c in creds.values() if c["requests"]]
    assert sum(c["requests"] for c in used) == 2
    for c in used:
        assert (c["input_tokens"], c["output_tokens"], c["cache_read_tokens"], c["cache_write_tokens"]) == \
            (110 * c["requests"], 15 * c["requests"], 100 * c["requests"], 7 * c["requests"])
        want = "included" if c["id"] == "an1sub" else "estimated"
        assert c["cost_status"] == want and (c["cost_usd"] is None) == (want == "included")


def test_an_unpriced_model_is_unknown_with_a_null_cost(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    body = {"id": "c1", "object": "chat.completion", "model": "lab/never-priced", "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    up.script(EDGE_KEYS[0], http(200, body=body))
    with running_chain_proxy(tmp_home) as p:
        openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20).chat.completions.create(
            model="lab/never-priced", messages=MSG)
        settled(p)
    cred = usage_json(tmp_home)["openrouter"]["credentials"][0]
    assert cred["cost_status"] == "unknown" and cred["cost_usd"] is None and cred["input_tokens"] == 5


def test_a_stream_cut_short_records_what_it_saw_as_partial(tmp_home, up) -> None:
    _anthropic_home(tmp_home, up.url)
    up.script(ANT_KEY, stream(ANT_STREAM[:3], then="cut"))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError):
            _ant_stream(p)
        settled(p)
    assert [r[3:5] + r[-1:] for r in ledger_rows(tmp_home)] == [(110, 1, 1)]


def test_the_prometheus_counters_carry_tokens_and_cost_per_credential(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    body = {"id": "c1", "object": "chat.completion", "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0.25}}
    up.script(EDGE_KEYS[0], http(200, body=body))
    with running_chain_proxy(tmp_home) as p:
        httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "m", "messages": MSG})
        settled(p)
        text = httpx.get(p.url[:-3] + "/metrics", timeout=20).text
    assert 'hermes_admin_credential_tokens_total{credential="or0edg",kind="input",pool="openrouter"} 5.0' in text
    assert 'hermes_admin_credential_cost_usd_total{credential="or0edg",pool="openrouter",status="actual"} 0.25' in text
    assert EDGE_KEYS[0] not in text


# --- a ledger in trouble is a notice; the proxy serves on -------------------------------------

def _serve_some(p, n: int = 3) -> list[int]:
    return [httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "m", "messages": MSG}).status_code
            for _ in range(n)]


def _ok_forever(up) -> None:
    body = {"id": "c1", "object": "chat.completion", "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    up.script(EDGE_KEYS[0], *[http(200, body=body)] * 20)


def test_a_corrupt_ledger_is_a_notice_and_the_proxy_serves(tmp_home, up, caplog) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    _ok_forever(up)
    ledger_path(tmp_home.root).write_bytes(b"not a database at all" * 50)
    with caplog.at_level(logging.WARNING), running_chain_proxy(tmp_home) as p:
        assert _serve_some(p) == [200] * 3
        wait_until(lambda: "not a usable usage ledger" in caplog.text, what="the notice")
    assert ledger_path(tmp_home.root).read_bytes().startswith(b"not a database")


def test_a_locked_ledger_is_a_notice_then_catches_up(tmp_home, up, caplog) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    _ok_forever(up)
    with caplog.at_level(logging.WARNING), running_chain_proxy(tmp_home) as p:
        assert _serve_some(p, 1) == [200]
        settled(p)
        holder = sqlite3.connect(ledger_path(tmp_home.root), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        assert _serve_some(p) == [200] * 3
        wait_until(lambda: "locked" in caplog.text, what="the notice")
        holder.execute("ROLLBACK")
        holder.close()
        settled(p)
    assert len(ledger_rows(tmp_home)) == 4


def test_a_removed_ledger_is_a_notice_and_a_new_one_is_started(tmp_home, up, caplog) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    _ok_forever(up)
    with caplog.at_level(logging.WARNING), running_chain_proxy(tmp_home) as p:
        assert _serve_some(p, 1) == [200]
        settled(p)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{ledger_path(tmp_home.root)}{suffix}"):
                os.unlink(f"{ledger_path(tmp_home.root)}{suffix}")
        assert _serve_some(p, 2) == [200] * 2
        settled(p)
        assert "removed" in caplog.text
    assert len(ledger_rows(tmp_home)) == 2


def test_control_without_the_relays_tap_a_stream_records_no_tokens(tmp_home, up, monkeypatch) -> None:
    from store.proxy.edge import relay

    class Deaf(relay.StreamUsage):
        def feed(self, chunk: bytes) -> None:
            pass

    monkeypatch.setattr(relay, "StreamUsage", Deaf)
    _anthropic_home(tmp_home, up.url)
    up.script(ANT_KEY, stream(ANT_STREAM))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        _ant_stream(p)
        settled(p)
    assert [r[3:5] for r in ledger_rows(tmp_home)] == [(None, None)]     # what the real tap test sees, gone


def test_an_encoded_stream_is_recorded_with_its_usage_read_decoded(tmp_home, up) -> None:
    """A gzip stream is relayed decoded (tests/proxy/test_encoded_answers.py), so its usage is
    read as a plain stream's."""
    import gzip

    from tests.proxy.upstream import Behaviour

    edge_seed(tmp_home, up.url, fallback=False)
    body = gzip.compress(_chunk(None, {"prompt_tokens": 9, "completion_tokens": 1}) + _sse(b"[DONE]"))
    up.script(EDGE_KEYS[0], Behaviour("stream", 200, (("Content-Type", "text/event-stream"),
                                                      ("Content-Encoding", "gzip")), chunks=(body,)))
    with running_chain_proxy(tmp_home) as p:
        raw = httpx.post(p.url + "/chat/completions", timeout=20, headers={"Accept-Encoding": "gzip"},
                         json={"model": "m", "messages": MSG, "stream": True})
        settled(p)
    assert raw.status_code == 200
    assert [r[:5] for r in ledger_rows(tmp_home)] == [("openrouter", "or0edg", "m", 9, 1)]
