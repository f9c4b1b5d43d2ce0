"""The stream relay keeps its promises (issue 27), shown with the real ``openai`` and
``anthropic`` SDKs against a scripted upstream:

- a key the upstream echoes split across any number of chunks never reaches the client
  whole (control: redaction per chunk leaks it);
- a stream the upstream cuts mid-event has its partial event made the proxy's own error
  event, in the protocol's own form, so the SDKs raise (control: the old framing glues the
  error onto the partial line and the ``anthropic`` SDK ends silently);
- a client that leaves while the upstream is silent is released at once: its in-flight
  counts and its upstream connection (control: without handler cancellation they stay).
"""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest

from store.proxy import server
from store.proxy.edge import relay, sse
from store.redaction.fingerprints import fingerprint
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, chat_delta, stall, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow
KEY = EDGE_KEYS[0]
MSG = [{"role": "user", "content": "hi"}]
ANT_KEY = "sk-ant-api03-relaytest-" + "R" * 40
SONNET = "claude-sonnet-4-5"


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u



def _echoing(key: str, cuts: int) -> list[bytes]:
    """A stream whose second event holds *key*, split into *cuts* + 1 chunks inside it."""
    whole = chat_delta("hello ") + chat_delta(f"your key is {key} ok") + chat_delta(" bye") + b"data: [DONE]\n\n"
    start = whole.index(key.encode())
    points = sorted({start + 1 + (len(key) - 2) * i // max(1, cuts - 1) for i in range(cuts)})
    edges = [0, *points, len(whole)]
    return [whole[a:b] for a, b in zip(edges, edges[1:], strict=False)]


def _stream_text(p) -> str:
    c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
    return "".join(ch.choices[0].delta.content or "" for ch in
                   c.chat.completions.create(model="m", messages=MSG, stream=True))


@pytest.mark.parametrize("cuts", [1, 2, 5])
def test_a_key_split_across_chunks_never_reaches_the_client_whole(tmp_home, up, cuts) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    chunks = _echoing(KEY, cuts)
    assert len(chunks) >= cuts + 1 and not any(KEY.encode() in c for c in chunks)
    up.script(KEY, stream(chunks, every=0.05))     # apart, so the proxy reads them apart
    with running_chain_proxy(tmp_home) as p:
        text = _stream_text(p)
    assert KEY not in text
    assert text == f"hello your key is {fingerprint(KEY)} ok bye"


def test_control_redaction_per_chunk_leaks_the_split_key(tmp_home, up, monkeypatch) -> None:
    class PerChunk(sse.StreamRedaction):
        def feed(self, data: bytes) -> bytes:
            return self.own.hide(data)

        def flush(self) -> bytes:
            return b""

    monkeypatch.setattr(relay, "StreamRedaction", PerChunk)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream(_echoing(KEY, 2), every=0.05))
    with running_chain_proxy(tmp_home) as p:
        assert KEY in _stream_text(p)


# --- a cut stream is framed ------------------------------------------------------------------

def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


ANT_HEAD = [
    _event("message_start", {"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": SONNET, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    _event("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}}),
    _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": "Hel"}}),
]


def _anthropic_home(home, base: str) -> None:
    write_store(home, make_store({"anthropic": [make_row("an0rel", token=ANT_KEY, base_url=base)]}))
    home.config.write_text(f"model:\n  provider: anthropic\n  default: {SONNET}\n")


def _anthropic_stream(p):
    c = anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=20)
    with c.messages.stream(model=SONNET, max_tokens=16, messages=MSG) as s:
        for _ in s:
            pass
        return s.get_final_message()


def test_a_stream_cut_mid_event_makes_the_anthropic_sdk_raise(tmp_home, up) -> None:
    _anthropic_home(tmp_home, up.url)
    up.script(None, stream([*ANT_HEAD, b"event: content"], then="cut"))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError) as err:
            _anthropic_stream(p)
        raw = httpx.post(p.url + "/messages", timeout=20, json={"model": SONNET, "stream": True})
    assert "upstream stream broke" in str(err.value)
    # The partial event is made the proxy's error event: its name replaced, its data the error.
    assert raw.content.startswith(b"".join(ANT_HEAD) + b"event: content\ndata: ")
    assert raw.content.endswith(b"}\nevent: error\n\n")


def test_control_the_error_glued_onto_the_partial_line_ends_silently(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(sse, "closing", lambda partial, event, data: (b"", False))
    _anthropic_home(tmp_home, up.url)
    up.script(None, stream([*ANT_HEAD, b"event: content"], then="cut"))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        final = _anthropic_stream(p)                 # no exception: the client thinks it ended
    assert final.stop_reason is None


def test_a_cut_mid_data_line_still_makes_the_anthropic_sdk_raise(tmp_home, up) -> None:
    """The partial event is made the proxy's error event: the SDK raises the proxy's error
    (tests/proxy/test_stream_cut.py: at every byte offset)."""
    _anthropic_home(tmp_home, up.url)
    up.script(None, stream([*ANT_HEAD, b'event: content_block_delta\ndata: {"type": "content_bl'], then="cut"))
    with running_chain_proxy(tmp_home, primary="anthropic") as p, pytest.raises(anthropic.APIStatusError) as err:
        _anthropic_stream(p)
    assert "upstream stream broke" in str(err.value)


def test_a_cut_chat_stream_ends_with_an_error_chunk_the_openai_sdk_raises(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream([chat_delta("hel"), chat_delta("lo"), b"da"], then="cut"))
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
        got = []
        with pytest.raises(openai.APIError) as err:
            for ch in c.chat.completions.create(model="m", messages=MSG, stream=True):
                got.append(ch.choices[0].delta.content)
        raw = httpx.post(p.url + "/chat/completions", timeout=20, json={"model": "m", "stream": True})
    assert got == ["hel", "lo"] and "upstream stream broke" in str(err.value)
    tail = raw.content.split(chat_delta("lo"), 1)[1]
    assert tail.startswith(b"da\ndata: ") and tail.endswith(b"\n\n")      # the partial line ended, the error its data
    assert json.loads(tail[len(b"da\ndata: "):])["error"]["type"] == "upstream_stream_broken"


def test_a_cut_responses_stream_ends_with_response_failed(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    created = _event("response.created", {"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "output": []}})
    up.script(KEY, stream([created, b"event: response.output_text.delta\ndata: {\"ty"], then="cut"))
    with running_chain_proxy(tmp_home) as p:
        raw = httpx.post(p.url + "/responses", timeout=20, json={"model": "m", "input": "hi", "stream": True})
    tail = raw.content.rsplit(b'data: {"ty', 1)[1]
    assert tail.endswith(b"\nevent: response.failed\n\n")        # the cut JSON completed, the event renamed
    failed = json.loads(b'{"ty' + tail.split(b"\n", 1)[0])
    assert failed["type"] == "response.failed" and failed["response"]["status"] == "failed"
    assert "upstream stream broke" in failed["response"]["error"]["message"]


def test_a_responses_stream_cut_at_an_event_boundary_makes_the_openai_sdk_raise(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    created = _event("response.created", {"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "in_progress",
        "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}})
    up.script(KEY, stream([created], then="cut"))
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
        with pytest.raises(openai.APIError) as err:
            for _ in c.responses.create(model="m", input="hi", stream=True):
                pass
    assert "upstream stream broke" in str(err.value)


# --- a client that leaves is released at once -------------------------------------------------

def _leave_mid_stream(p) -> None:
    """Open a stream, read its first event, and go away (the upstream then says nothing)."""
    with httpx.stream("POST", p.url + "/chat/completions", timeout=20,
                      json={"model": "m", "messages": MSG, "stream": True}) as r:
        for _ in r.iter_raw():
            break


def _released(p, up) -> bool:
    return (p.server.in_flight == 0 and p.server.stats.in_flight_total() == 0
            and not p.chain.headroom._flying and up.hung_up == 1)


def test_a_client_that_leaves_is_released_at_once(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream([chat_delta("hel")], then="hang"))
    with running_chain_proxy(tmp_home) as p:
        _leave_mid_stream(p)
        wait_until(lambda: _released(p, up), timeout=5, what="the departed client released")
        assert p.server.stats.in_flight.get(("openrouter", "or0edg")) == 0


def test_control_without_handler_cancellation_the_departed_client_stays_in_flight(tmp_home, up,
                                                                                    monkeypatch) -> None:
    monkeypatch.setattr(server, "HANDLER_CANCELLATION", False)
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stream([chat_delta("hel")], then="hang"))
    with running_chain_proxy(tmp_home, drain_timeout=0.5) as p:
        _leave_mid_stream(p)
        with pytest.raises(AssertionError):
            wait_until(lambda: _released(p, up), timeout=2, what="the departed client released")
        assert p.server.stats.in_flight_total() == 1


def test_a_client_that_leaves_before_any_answer_is_released_at_once(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    up.script(KEY, stall(120))                       # no answer at all, for minutes
    with running_chain_proxy(tmp_home) as p:
        with pytest.raises(httpx.ReadTimeout):       # the client gives up after 1 s and leaves
            httpx.post(p.url + "/chat/completions", timeout=1, json={"model": "m", "messages": MSG})
        wait_until(lambda: p.server.in_flight == 0 and p.server.stats.in_flight_total() == 0
                   and not p.chain.headroom._flying, timeout=5, what="the departed client released")
