"""A stream the upstream cuts anywhere, even inside a ``data:`` line or a character, ends
with the proxy's error, raised by the real ``openai`` and ``anthropic`` SDKs (issue 27).

- every byte offset of one event, for each protocol (Anthropic Messages, Chat Completions,
  Responses): what reached the client, then what :class:`store.proxy.edge.sse.Framing` ends it
  with, read by the SDK itself (its stream over an ``httpx.MockTransport``): the SDK raises
  its API error carrying the proxy's message, never a decode error nor a silent end;
- the same through a running proxy, at every byte offset of a chat event, with the
  ``openai`` SDK;
- hypothesis: any JSON object cut anywhere is completed with the proxy's members winning,
  and any event of random JSON cut anywhere and relayed in random pieces ends in the SDK's
  API error;
- negative control: the old closing (``\\n\\n`` and then the error event) gives a decode
  error for a cut inside the data line.
"""

from __future__ import annotations

import json

import anthropic
import httpx
import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.proxy.edge import sse, sse_close
from store.proxy.edge.sse import Framing
from store.proxy.edge.sse_close import object_tail
from tests.proxy.upstream import ScriptedUpstream, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

SONNET = "claude-sonnet-4-5"
MSG = [{"role": "user", "content": "hi"}]
BROKE = "upstream stream broke after 999 bytes"
TEXT = 'Hé ☃ 😀 "quoted" \\ tail'


def _event(name: str | None, data: dict) -> bytes:
    head = b"" if name is None else f"event: {name}\n".encode()
    return head + b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


ANT_HEAD = (_event("message_start", {"type": "message_start", "message": {
    "id": "msg_01", "type": "message", "role": "assistant", "model": SONNET, "content": [], "stop_reason": None,
    "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}})
    + _event("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}))
ANT_CUT = _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": TEXT}})


def _chunk(text: str) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None, "logprobs": None}]}


CHAT_HEAD = _event(None, _chunk("hel"))
CHAT_CUT = _event(None, _chunk(TEXT))
RESP_HEAD = _event("response.created", {"type": "response.created", "sequence_number": 0, "response": {
    "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "in_progress", "output": [],
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}})
RESP_CUT = _event("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                                                 "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                 "delta": TEXT, "logprobs": []})
# (protocol, the client path, the events before the cut one, the event cut)
PROTOCOLS = [("anthropic", "/v1/messages", ANT_HEAD, ANT_CUT), ("chat", "/v1/chat/completions", CHAT_HEAD, CHAT_CUT),
             ("responses", "/v1/responses", RESP_HEAD, RESP_CUT)]


def _mock(body: bytes, lib=httpx):      # the anthropic SDK takes httpx2's client
    def answer(request):
        return lib.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    return lib.Client(transport=lib.MockTransport(answer))


def sdk_error(protocol: str, body: bytes) -> BaseException | None:
    """What the real SDK raises reading the stream *body* (None: it ended without raising)."""
    try:
        if protocol == "anthropic":
            c = anthropic.Anthropic(api_key="x", base_url="http://upstream.test", http_client=_mock(body, httpx2),
                                    max_retries=0)
            with c.messages.stream(model=SONNET, max_tokens=8, messages=MSG) as s:   # type: ignore[arg-type]
                for _ in s:
                    pass
        else:
            o = openai.OpenAI(api_key="x", base_url="http://upstream.test/v1", http_client=_mock(body),
                              max_retries=0)
            events = (o.chat.completions.create(model="m", messages=MSG, stream=True)  # type: ignore[arg-type]
                      if protocol == "chat" else o.responses.create(model="m", input="hi", stream=True))
            for _ in events:
                pass
    except Exception as exc:       # noqa: BLE001 - the test looks at which
        return exc
    return None


def relayed(head: bytes, partial: bytes, path: str, pieces: list[int] | None = None) -> bytes:
    """What the client gets: *head* and *partial* as relayed (in *pieces*), then the ending."""
    frame, sent = Framing(), head + partial
    edges = [0, *sorted(p for p in (pieces or []) if 0 < p < len(sent)), len(sent)]
    for a, b in zip(edges, edges[1:], strict=False):
        frame.note(sent[a:b])
    return sent + frame.ending(path, BROKE, "upstream_stream_broken", 502, "rid-1")


def _raised_ours(protocol: str, exc: BaseException | None) -> bool:
    api = anthropic.APIStatusError if protocol == "anthropic" else openai.APIError
    return isinstance(exc, api) and BROKE in str(exc)


@pytest.mark.parametrize("protocol,path,head,event", PROTOCOLS, ids=[p[0] for p in PROTOCOLS])
def test_a_cut_at_every_byte_of_an_event_makes_the_sdk_raise_the_proxys_error(protocol, path, head,
                                                                               event) -> None:
    wrong = {}
    for cut in range(len(event) + 1):
        exc = sdk_error(protocol, relayed(head, event[:cut], path))
        if not _raised_ours(protocol, exc):
            wrong[cut] = repr(exc)
    assert wrong == {}


def test_control_the_old_closing_gives_a_decode_error_inside_the_data_line(monkeypatch) -> None:
    monkeypatch.setattr(sse, "closing", lambda partial, event, data: (b"\n\n" if partial else b"", False))
    inside = CHAT_CUT.index(b"delta") + 3
    exc = sdk_error("chat", relayed(CHAT_HEAD, CHAT_CUT[:inside], "/v1/chat/completions"))
    assert isinstance(exc, json.JSONDecodeError)
    inside = ANT_CUT.index(b"text_delta")
    exc = sdk_error("anthropic", relayed(ANT_HEAD, ANT_CUT[:inside], "/v1/messages"))
    assert not _raised_ours("anthropic", exc)


def test_a_cut_at_every_byte_of_a_chat_event_through_the_proxy(tmp_home) -> None:
    key = EDGE_KEYS[0]
    with ScriptedUpstream() as up:
        edge_seed(tmp_home, up.url, fallback=False)
        with running_chain_proxy(tmp_home) as p:
            c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)
            wrong = {}
            for cut in range(1, len(CHAT_CUT)):
                up.reset_script()
                up.script(key, stream([CHAT_HEAD, CHAT_CUT[:cut]], then="cut"))
                got = []
                try:
                    for ch in c.chat.completions.create(model="m", messages=MSG, stream=True):  # type: ignore[arg-type]
                        got.append(ch.choices[0].delta.content)
                except openai.APIError as exc:
                    whole = cut >= len(CHAT_CUT) - 2       # only the blank line was cut: the chunk is read
                    if "upstream stream broke" not in str(exc) or got != ["hel", *([TEXT] if whole else [])]:
                        wrong[cut] = (got, str(exc))
                except Exception as exc:   # noqa: BLE001
                    wrong[cut] = (got, repr(exc))
                else:
                    wrong[cut] = (got, "no error")
    assert wrong == {}


# --- hypothesis: any JSON object, cut anywhere ---------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=12)
OBJECTS = st.dictionaries(st.text(max_size=6), JSON, max_size=5)
MEMBERS = '"type": "error", "error": {"message": "cut", "code": 502}'


@given(OBJECTS, st.booleans(), st.data())
@settings(max_examples=150, deadline=None)
def test_any_json_object_cut_anywhere_is_completed_with_our_members_last(obj, ascii_only, data) -> None:
    text = json.dumps(obj, ensure_ascii=ascii_only)
    cut = data.draw(st.integers(0, len(text) - 1))
    tail = object_tail(text[:cut], MEMBERS)
    assert tail is not None
    done = json.loads(text[:cut] + tail)
    assert done["error"] == {"message": "cut", "code": 502} and done["type"] == "error"


@given(OBJECTS, st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_chat_event_cut_anywhere_and_relayed_in_pieces_makes_the_sdk_raise(obj, data) -> None:
    event = _event(None, {**_chunk("x"), "extra": obj})
    cut = data.draw(st.integers(1, len(event) - 1))
    pieces = data.draw(st.lists(st.integers(1, len(CHAT_HEAD) + cut), max_size=4))
    exc = sdk_error("chat", relayed(CHAT_HEAD, event[:cut], "/v1/chat/completions", pieces))
    assert _raised_ours("chat", exc), repr(exc)


def test_an_event_over_the_cap_is_closed_and_followed_by_the_error() -> None:
    frame = Framing()
    frame.note(b'data: {"a": "' + b"x" * (sse_close.EVENT_CAP + 1))
    out = frame.ending("/v1/chat/completions", BROKE, "upstream_stream_broken", 502, "rid-1")
    assert out.startswith(b"\n\ndata: ") and json.loads(out[8:])["error"]["message"] == BROKE


@given(st.binary(max_size=300), st.sampled_from([p[1] for p in PROTOCOLS]))
@settings(max_examples=300, deadline=None)
def test_any_bytes_an_upstream_left_are_closed_into_one_whole_event(partial, path) -> None:
    """Hostile or broken upstream bytes (any, invalid UTF-8 included): the ending never
    raises and always leaves the stream at an event boundary with the proxy's error in it."""
    frame = Framing()
    frame.note(partial)
    out = frame.ending(path, BROKE, "upstream_stream_broken", 502, "rid-1")
    assert out.endswith((b"\n\n", b"\r\n\r\n")) and BROKE.encode() in out
