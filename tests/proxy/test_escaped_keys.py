"""The row's key never reaches a client in a form its JSON decoding turns back into the key:
written with JSON escapes (``sk-or-v1-C\\u0041NARY...``, one character or all of them), or
without its provider prefix (its randomness alone, when at least 16 characters long), in a
relayed 200 body, in a stream's events however they are split, and in an error body passed
on.

- through a running proxy, with the real ``openai`` SDK against a scripted upstream;
- hypothesis: any subset of the key's characters escaped, in an SSE event split anywhere,
  decodes to no key; and text that holds neither form is relayed byte for byte.

Negative control: before the fix each of the SDK tests sees the whole key.
"""

from __future__ import annotations

import json

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.edge.sse import StreamRedaction
from store.proxy.edge.wire import OwnToken
from tests.proxy.upstream import ScriptedUpstream, http, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy

KEY = EDGE_KEYS[0]                   # sk-or-v1-edgetest-000...0
BARE = KEY.removeprefix("sk-or-v1-edgetest-")
MSG = [{"role": "user", "content": "hi"}]
UNIT_KEY = "sk-or-v1-CANARY1-" + "q7Zp-x_9" * 5


def _esc(text: str, which: set[int] | None = None) -> str:
    """*text* as JSON would carry it, the characters at *which* (None: all) as ``\\uXXXX``."""
    return "".join(f"\\u{ord(c):04X}" if which is None or i in which else c for i, c in enumerate(text))


def _chat_raw(content_json: str) -> bytes:
    """A chat completion whose content is the JSON string body *content_json*, as written."""
    return ('{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
            '"finish_reason": "stop", "message": {"role": "assistant", "content": "' + content_json + '"}}]}').encode()


def _delta_raw(content_json: str) -> bytes:
    return ('data: {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": '
            '[{"index": 0, "delta": {"content": "' + content_json + '"}, "finish_reason": null}]}\n\n').encode()


@pytest.fixture
def proxied(tmp_home):
    with ScriptedUpstream() as up:
        edge_seed(tmp_home, up.url, keys=1, fallback=False)
        with running_chain_proxy(tmp_home) as p:
            yield up, p


def _client(p) -> openai.OpenAI:
    return openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20)


def _clean(text: str) -> bool:
    return KEY not in text and BARE not in text


FORMS = {"one escaped": _esc(KEY, {10}), "all escaped": _esc(KEY), "bare": BARE, "bare escaped": _esc(BARE, {0, 5}),
         "lower-case hex": _esc(KEY, {3}).replace("\\u002D", "\\u002d")}


@pytest.mark.parametrize("form", FORMS)
def test_a_200_body_never_gives_the_sdk_the_key(proxied, form) -> None:
    up, p = proxied
    up.script(KEY, http(200, body=_chat_raw(f"the key: {FORMS[form]}.")))
    got = _client(p).chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    content = got.choices[0].message.content or ""
    assert _clean(content) and content.startswith("the key: ") and content.endswith("…0000.")


@pytest.mark.parametrize("form", FORMS)
def test_a_stream_never_gives_the_sdk_the_key(proxied, form) -> None:
    up, p = proxied
    data = _delta_raw("a ") + _delta_raw(FORMS[form]) + _delta_raw(" b") + b"data: [DONE]\n\n"
    up.script(KEY, stream([data[i:i + 7] for i in range(0, len(data), 7)]))
    text = "".join(ch.choices[0].delta.content or "" for ch in
                   _client(p).chat.completions.create(model="m", messages=MSG, stream=True))  # type: ignore[arg-type]
    assert _clean(text) and text.startswith("a ") and text.endswith(" b")


def test_an_error_body_passed_on_never_gives_the_sdk_the_key(proxied) -> None:
    up, p = proxied
    body = ('{"error": {"message": "bad request for ' + _esc(KEY, {0, 9, 30}) + ' and ' + BARE + '", '
            '"type": "invalid_request_error"}}').encode()
    up.script(KEY, http(400, body=body))
    with pytest.raises(openai.BadRequestError) as got:
        _client(p).chat.completions.create(model="m", messages=MSG)  # type: ignore[arg-type]
    assert _clean(json.dumps(got.value.body)) and _clean(str(got.value))


# --- without the proxy ---------------------------------------------------------------------------

def test_the_bare_part_is_the_randomness_and_only_a_long_one() -> None:
    from store.proxy.edge.wire import bare_part
    assert bare_part(UNIT_KEY.encode()) == UNIT_KEY.removeprefix("sk-or-v1-").encode()
    assert bare_part(b"sk-proj-shortone") == b""             # under 16: not hidden alone
    assert bare_part(b"NoPrefixAtAll0123456789") == b""      # no prefix: the key is its own bare part
    own = OwnToken(UNIT_KEY)
    words = b'data: {"text": "CANARY1 streaming-tokens \\u00e9 q7Zp-x_9 sk-or-v1- \\\\u0041"}\n\n'
    assert own.hide(words) == words                          # ordinary words are left alone


def _decoded_contents(out: bytes) -> str:
    parts = []
    for line in out.split(b"\n"):
        if line.startswith(b"data: "):
            parts.append(json.loads(line[6:])["t"])
    return "".join(parts)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, len(UNIT_KEY) - 1)), st.booleans(), st.lists(st.integers(0, 600), max_size=8),
       st.text(alphabet="ab \\\"\n", max_size=10))
def test_any_subset_escaped_in_any_split_decodes_to_no_key(which, bare, points, filler) -> None:
    key = UNIT_KEY.removeprefix("sk-or-v1-") if bare else UNIT_KEY
    event = b'data: {"t": ' + json.dumps(filler).encode() + b'}\n\n'
    event += b'data: {"t": "<' + _esc(key, which).encode() + b'>"}\n\n' + event
    edges = [0, *sorted({min(len(event), q) for q in points}), len(event)]
    scrub, out = StreamRedaction(OwnToken(UNIT_KEY)), b""
    for a, b in zip(edges, edges[1:], strict=False):
        out += scrub.feed(event[a:b])
        if event[a:b].endswith(b"\n"):
            assert scrub.held == 0           # nothing held at a line's end, so none at an event's
    out += scrub.flush()
    text = _decoded_contents(out)
    assert UNIT_KEY.removeprefix("sk-or-v1-") not in text
    assert text == filler + "<sk-or-…" + UNIT_KEY[-4:] + ">" + filler     # the key's fingerprint either way
