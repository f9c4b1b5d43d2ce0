"""A success that comes encoded is never relayed unchecked: the proxy asks upstreams for
``identity``, decodes a gzip or deflate answer (a body whole, a stream as it arrives) and
relays it decoded with the row's key hidden, and refuses one it cannot decode (br, a broken
gzip) with an error the SDKs raise.

- through a running proxy, with the real ``openai`` SDK against a
  scripted upstream: a gzip 200 and a gzip stream echoing the row's key reach the client
  with its fingerprint; a gzip stream cut midway ends in the SDK's ``APIError`` (not a JSON
  decode error); a ``br`` 200 is an error; the upstream is asked for identity whatever the
  client accepts;
- hypothesis: any split of a gzip stream into chunks decodes, redacted, to the whole
  stream's redaction.

Negative control: before the fix the first three leak the key (or raise a decode error).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.edge.encoded import DecodedStream, Undecodable, decode_whole, decoder
from store.proxy.edge.sse import StreamRedaction
from store.proxy.edge.wire import OwnToken
from store.redaction.fingerprints import fingerprint
from tests.proxy.upstream import Behaviour, ScriptedUpstream, chat_delta, http
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

KEY = EDGE_KEYS[0]
SHOWN = fingerprint(KEY)
MSG = [{"role": "user", "content": "hi"}]


def _chat(text: str) -> dict:
    return {"id": "chatcmpl-up", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}


def _encoded(body: bytes, encoding: str = "gzip") -> Behaviour:
    return Behaviour("http", 200, (("Content-Type", "application/json"), ("Content-Encoding", encoding)), body)


def _gzip_stream(data: bytes, pieces: int = 16, then: str = "end") -> Behaviour:
    z = gzip.compress(data)
    if then == "cut":
        z = z[:len(z) * 2 // 3]
    chunks = tuple(z[i:i + pieces] for i in range(0, len(z), pieces))
    return Behaviour("stream", 200, (("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")),
                     chunks=chunks, then=then)


def _sse() -> bytes:
    return chat_delta("the key is ") + chat_delta(KEY) + chat_delta(" end") + b"data: [DONE]\n\n"


@pytest.fixture
def proxied(tmp_home):
    with ScriptedUpstream() as up:
        edge_seed(tmp_home, up.url, keys=1, fallback=False)
        with running_chain_proxy(tmp_home) as p:
            yield up, p


def _client(p) -> openai.OpenAI:
    return openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)


def test_a_gzip_200_reaches_the_openai_sdk_decoded_with_the_key_hidden(proxied) -> None:
    up, p = proxied
    up.script(KEY, _encoded(gzip.compress(json.dumps(_chat(f"echo {KEY}")).encode())))
    got = _client(p).chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert got.choices[0].message.content == f"echo {SHOWN}"


def test_a_deflate_200_reaches_the_sdk_decoded_with_the_key_hidden(proxied) -> None:
    up, p = proxied
    up.script(KEY, _encoded(zlib.compress(json.dumps(_chat(f"{KEY}!")).encode()), "deflate"))
    got = _client(p).chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert got.choices[0].message.content == f"{SHOWN}!"


def test_a_gzip_stream_reaches_the_sdk_decoded_with_the_key_hidden(proxied) -> None:
    up, p = proxied
    up.script(KEY, _gzip_stream(_sse()))
    text = "".join(ch.choices[0].delta.content or "" for ch in
                   _client(p).chat.completions.create(model="m", messages=MSG, stream=True))  # type: ignore[arg-type]
    assert text == f"the key is {SHOWN} end"


def test_a_cut_gzip_stream_ends_in_the_sdks_api_error(proxied) -> None:
    up, p = proxied
    up.script(KEY, _gzip_stream(_sse() * 20, then="cut"))
    with pytest.raises(openai.APIError, match="upstream stream broke"):
        for _ in _client(p).chat.completions.create(model="m", messages=MSG, stream=True):  # type: ignore[arg-type]
            pass


@pytest.mark.parametrize("encoding,body", [("br", b"\x0b\x02\x80{}\x03"), ("gzip", b"\x1f\x8bnot gzip at all")])
def test_a_200_the_proxy_cannot_decode_is_an_error_not_relayed(proxied, encoding, body) -> None:
    up, p = proxied
    up.script(KEY, _encoded(body, encoding))
    with pytest.raises(openai.APIStatusError, match="cannot check for keys") as got:
        _client(p).chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert got.value.status_code == 502


def test_the_upstream_is_asked_for_identity_whatever_the_client_accepts(proxied) -> None:
    up, p = proxied
    up.script(KEY, http(200, body=_chat("ok")))
    c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20,
                      default_headers={"Accept-Encoding": "gzip, br"})
    c.chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert up.seen[-1].header("Accept-Encoding") == ["identity"]


# --- hypothesis: any split of a gzip stream -------------------------------------------------------

def _decoded(chunks: list[bytes]) -> bytes:
    async def run() -> bytes:
        it = iter(chunks)

        async def read() -> bytes:
            return next(it, b"")
        d = decoder("gzip")
        assert d is not None
        stream, scrub, out = DecodedStream(read, d), StreamRedaction(OwnToken(KEY)), b""
        while chunk := await stream.read():
            out += scrub.feed(chunk)
        return out + scrub.flush()
    return asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"data: ", KEY.encode(), b"\n\n", b"x" * 40, b"\xc3\xa9"]), max_size=30),
       st.lists(st.integers(0, 2000), max_size=10))
def test_any_split_of_a_gzip_stream_decodes_to_the_whole_streams_redaction(parts, points) -> None:
    whole = b"".join(parts)
    z = gzip.compress(whole)
    edges = [0, *sorted({min(len(z), q) for q in points}), len(z)]
    out = _decoded([z[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a])
    assert out == whole.replace(KEY.encode(), SHOWN.encode())


def test_a_truncated_gzip_stream_is_undecodable_and_a_whole_one_is_not() -> None:
    z = gzip.compress(_sse())
    with pytest.raises(Undecodable):
        _decoded([z[:-5]])
    assert decode_whole(z, "gzip") == _sse()
    assert decode_whole(z[:-5], "gzip") is None
    assert decode_whole(z, "br") is None


def test_an_empty_encoded_answer_is_no_broken_encoding(proxied) -> None:
    up, p = proxied
    assert _decoded([]) == b""
    up.script(KEY, _encoded(b""))
    r = _client(p).chat.completions.with_raw_response.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert r.http_response.status_code == 200 and r.http_response.content == b""
