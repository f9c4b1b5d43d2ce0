"""The Anthropic Messages side of the relay's checks, with the real ``anthropic`` SDK: a gzip
stream that echoes the row's key JSON-escaped reaches the SDK decoded with the key's
fingerprint, and a gzip stream the upstream cuts ends in the SDK's ``APIError`` carrying
the proxy's message (the error event is Anthropic's ``event: error``).

Negative control: before the fixes the first gives the SDK the whole key, the second a
decode error."""

from __future__ import annotations

import gzip
import json

import anthropic
import pytest

from store.redaction.fingerprints import fingerprint
from tests.proxy.anthropic_helpers import API_KEY, SONNET, client, seed
from tests.proxy.upstream import Behaviour, ScriptedUpstream
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow
ESCAPED = "".join(f"\\u{ord(c):04x}" if i % 3 == 0 else c for i, c in enumerate(API_KEY))


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


START = _event("message_start", {"type": "message_start", "message": {
    "id": "msg_01", "type": "message", "role": "assistant", "model": SONNET, "content": [], "stop_reason": None,
    "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}) + _event(
    "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
DELTA = ('event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": '
         '{"type": "text_delta", "text": "key ' + ESCAPED + ' end"}}\n\n').encode()
END = _event("content_block_stop", {"type": "content_block_stop", "index": 0}) + _event(
    "message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                      "usage": {"output_tokens": 2}}) + _event("message_stop", {"type": "message_stop"})


def _gzip_stream(data: bytes, then: str = "end") -> Behaviour:
    z = gzip.compress(data)
    if then == "cut":
        z = z[:len(z) * 2 // 3]
    return Behaviour("stream", 200, (("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")),
                     chunks=tuple(z[i:i + 11] for i in range(0, len(z), 11)), then=then)


@pytest.fixture
def proxied(tmp_home):
    with ScriptedUpstream() as up:
        seed(tmp_home, up.url)
        with running_chain_proxy(tmp_home, primary="anthropic") as p:
            yield up, p


def _stream_text(p) -> str:
    with client(p).messages.stream(model=SONNET, max_tokens=16, messages=[{"role": "user", "content": "hi"}]) as s:
        return "".join(s.text_stream)


def test_a_gzip_stream_with_the_key_escaped_reaches_the_sdk_with_its_fingerprint(proxied) -> None:
    up, p = proxied
    up.script(API_KEY, _gzip_stream(START + DELTA + END))
    assert _stream_text(p) == f"key {fingerprint(API_KEY)} end"


def test_a_cut_gzip_stream_ends_in_the_sdks_api_error(proxied) -> None:
    up, p = proxied
    up.script(API_KEY, _gzip_stream(START + DELTA * 30 + END, then="cut"))
    with pytest.raises(anthropic.APIError, match="upstream stream broke"):
        _stream_text(p)
