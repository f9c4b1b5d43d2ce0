"""The door reads the model of an encoded request body as it reads a plain one:

- a gzip or deflate body is decoded (bounded by the body cap) and its model bound applied:
  a hostile name is a 400 naming ``model`` whatever the encoding (hypothesis: hostile names
  x identity, gzip, deflate: the same verdict, and no bad name reaches the upstream); a fine
  one goes on byte for byte with its ``Content-Encoding`` (the real openai and anthropic SDKs
  behind a transport that compresses what they send);
- the chain gets the model it read: a 429 for one model, sent gzipped, benches that model on
  the key, not the whole key (another model still gets a 200);
- a decompression bomb is a 413, never expanded past the cap; a coding the proxy cannot read
  (br, zstd, unknown) a 415 and one that does not decode a 400, both naming
  ``Content-Encoding``, before anything is forwarded and with no key benched;
- a body that names ``model`` twice (one a hostile name) is refused, plain or encoded, and
  so is a hostile name in a body that is not JSON (a lenient reader may still read it);

and the controls: a door that does not decode lets the bad name through.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
import unicodedata
import zlib

import anthropic
import httpx
import httpx2
import openai
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.proxy.edge import coding, door
from store.proxy.server import ProxyServer
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import edge_seed, running_chain_proxy, status_fields

pytestmark = pytest.mark.slow
ANT_KEYS = ["sk-ant-api03-encodedtest-" + c * 40 for c in "AB"]
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-ok",
           "content": [{"type": "text", "text": "ok (scripted)"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
RATE_LIMITED = http(429, {"retry-after": "600"}, {"type": "error", "error": {
    "type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})
CONTROLS = {"Cc", "Cf", "Zl", "Zp", "Cs"}
ENCODINGS = ("identity", "gzip", "deflate", "deflate-raw")


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def pack(body: bytes, how: str) -> tuple[bytes, dict[str, str]]:
    """*body* compressed *how*, and the header that says so."""
    if how == "gzip":
        return gzip.compress(body, mtime=0), {"Content-Encoding": "gzip"}
    if how == "deflate":
        return zlib.compress(body), {"Content-Encoding": "deflate"}
    if how == "deflate-raw":          # what some clients send as deflate (no zlib header)
        c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return c.compress(body) + c.flush(), {"Content-Encoding": "deflate"}
    return body, {}


def packing(how: str, lib=httpx):
    """A client of *lib* (httpx; httpx2 for the anthropic SDK) that sends each request's body
    compressed *how* (as a client may choose)."""

    class Packing(lib.HTTPTransport):
        def handle_request(self, request):
            body = request.read()
            if body and how != "identity":
                packed, head = pack(body, how)
                headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
                request = lib.Request(request.method, request.url, headers=headers + list(head.items()),
                                      content=packed, extensions=request.extensions)
            return super().handle_request(request)

    return lib.Client(transport=Packing())


def hostile(name: str) -> bool:
    return len(name) > door.MODEL_CAP or any(unicodedata.category(ch) in CONTROLS for ch in name)


def post(p, body: bytes, headers: dict[str, str] | list[tuple[str, str]], path: str = "/chat/completions"):
    head = [("Content-Type", "application/json"),
            *(headers.items() if isinstance(headers, dict) else headers)]
    return httpx.post(p.url + path, content=body, headers=head, timeout=20)


# --- the verdict is the same in every encoding ------------------------------------------------------

NAMES = st.one_of(
    st.text(min_size=257, max_size=400),
    st.integers(250, 300).map(lambda n: "m" * n),
    st.builds(lambda a, c, b: a + c + b, st.text(max_size=20),
              st.sampled_from(["\x00", "\x01", "\n", "\x1b[31m", "\x7f", "\u0085", "\u2028", "\u200b", "\ud800"]),
              st.text(max_size=20)),
    st.text(max_size=40))


def test_the_door_gives_one_verdict_in_every_encoding(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(name=NAMES, twice=st.booleans(), ascii_only=st.booleans())
        def run(name: str, twice: bool, ascii_only: bool) -> None:
            doc = json.dumps({"model": name, "messages": [{"role": "user", "content": "hi"}]}, ensure_ascii=ascii_only)
            if twice:                 # the hostile name first, a fine one last (what json.loads keeps)
                doc = doc.replace('"messages"', '"model": "m", "messages"', 1)
            body = doc.encode("utf-8", "surrogatepass")
            bad = twice or hostile(name)
            verdicts = set()
            for how in ENCODINGS:
                up.reset_script()
                sent, head = pack(body, how)
                r = post(p, sent, head)
                err = r.json().get("error") if r.status_code != 200 else None
                verdicts.add((r.status_code, err and err["type"], err and err.get("param")))
                if bad:
                    assert up.seen == [], f"{how}: a bad name reached the upstream"
                else:
                    assert [s.body for s in up.seen] == [sent]            # as it came
                    assert up.seen[0].header("content-encoding") == list(head.values())
            assert verdicts == {(400, "invalid_model", "model") if bad else (200, None, None)}, (name, twice)

        run()


# --- the real SDKs, compressing what they send ---------------------------------------------------------

@pytest.mark.parametrize("how", ["gzip", "deflate"])
def test_an_sdk_sending_compressed_gets_the_model_bound(tmp_home, up, how) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=20,
                          http_client=packing(how))
        with pytest.raises(openai.BadRequestError) as refused:
            c.chat.completions.create(model="A" * 300, messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.BadRequestError) as controls:
            c.chat.completions.create(model="bad\u0001\u001b[31mname", messages=[{"role": "user", "content": "hi"}])
        assert up.seen == []
        ok = c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.param == "model" and refused.value.type == "invalid_model"
    assert controls.value.param == "model" and "U+0001" in controls.value.message
    assert ok.choices[0].message.content == "ok"
    assert len(up.seen) == 1 and up.seen[0].header("content-encoding") == [how]
    assert up.seen[0].body[:2] in (b"\x1f\x8b", b"\x78\x9c")     # compressed, as the SDK's transport sent it


def _anthropic_home(home, base: str) -> None:
    write_store(home, make_store({"anthropic": [make_row(f"an{i}enc", token=k, priority=i, base_url=base)
                                                for i, k in enumerate(ANT_KEYS)]}))
    home.config.write_text("model:\n  provider: anthropic\n  default: claude-ok\n")


def _claude(p, how: str = "identity") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=p.url[:-3], api_key="local", max_retries=0, timeout=30,
                               http_client=packing(how, httpx2))


def test_an_anthropic_sdk_sending_gzip_gets_the_model_bound(tmp_home, up) -> None:
    _anthropic_home(tmp_home, up.url)
    with running_chain_proxy(tmp_home, primary="anthropic") as p, pytest.raises(anthropic.BadRequestError) as refused:
        _claude(p, "gzip").messages.create(model="claude\x1b]0;x\x07", max_tokens=1,
                                           messages=[{"role": "user", "content": "hi"}])
    err = refused.value.body["error"]
    assert err["type"] == "invalid_request_error" and err["kind"] == "invalid_model" and err["param"] == "model"
    assert up.seen == []


@pytest.mark.parametrize("how", ["identity", "gzip", "deflate"])
def test_a_429_for_one_model_sent_compressed_benches_that_model_only(tmp_home, up, how) -> None:
    _anthropic_home(tmp_home, up.url)
    for key in ANT_KEYS:
        up.script(key, RATE_LIMITED, RATE_LIMITED, http(200, {}, MESSAGE))
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        with pytest.raises(anthropic.APIStatusError):
            _claude(p, how).messages.create(model="claude-limited", max_tokens=1,
                                            messages=[{"role": "user", "content": "hi"}])
        ok = _claude(p).messages.create(model="claude-ok", max_tokens=1, messages=[{"role": "user", "content": "hi"}])
    assert ok.content[0].text == "ok (scripted)"
    for row in read_doc(tmp_home)["credential_pool"]["anthropic"]:
        assert row["last_status"] is None, f"{how}: the whole key was benched"
        assert set(row["model_cooldowns"]) == {"claude-limited"}
    assert all(s.header("content-encoding") == ([] if how == "identity" else [how]) for s in up.seen[:-1])


# --- bombs, codings it cannot read, bodies that do not decode -------------------------------------

def _bomb(size: int) -> bytes:
    c = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    return b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()


def test_a_decompression_bomb_is_refused_never_expanded_past_the_cap() -> None:
    bomb = _bomb(256 << 20)                        # 256 MB of zeros in about 250 KB
    tracemalloc.start()
    try:
        with pytest.raises(coding.Refused) as refused:
            coding.decoded(bomb, ("gzip",), 1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.status == 413 and "Content-Encoding" in refused.value.message
    assert peak < 4 << 20, f"{peak} bytes at the peak for a 1 MB cap"


def test_control_an_unbounded_decompress_expands_the_bomb() -> None:
    bomb = _bomb(64 << 20)
    tracemalloc.start()
    try:
        assert len(gzip.decompress(bomb)) == 64 << 20
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak >= 64 << 20


def test_a_body_just_at_the_cap_decodes_and_one_byte_over_is_refused() -> None:
    body = b"x" * 1000
    assert coding.decoded(gzip.compress(body), ("gzip",), 1000) == body
    assert coding.decoded(zlib.compress(body), ("deflate",), 1000) == body
    with pytest.raises(coding.Refused) as over:
        coding.decoded(gzip.compress(body + b"y"), ("gzip",), 1000)
    assert over.value.status == 413


def test_a_bomb_through_the_proxy_is_a_413_and_nothing_goes_on(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    before = status_fields(tmp_home)
    with running_chain_proxy(tmp_home, body_cap=1 << 20) as p:
        r = post(p, _bomb(64 << 20), {"Content-Encoding": "gzip"})
        nested = post(p, gzip.compress(_bomb(8 << 20)), {"Content-Encoding": "gzip, gzip"})
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
    assert nested.status_code == 413
    assert up.seen == [] and status_fields(tmp_home) == before


FINE = json.dumps({"model": "m", "messages": []}).encode()
PACKED = gzip.compress(FINE, mtime=0)


@pytest.mark.parametrize("header, body, status, kind", [
    ("br", b"\x0b\x02\x80{}\x03", 415, "unsupported_content_encoding"),
    ("zstd", b"(\xb5/\xfd\x00X\x11\x00\x00{}", 415, "unsupported_content_encoding"),
    ("x-hermes-unknown", FINE, 415, "unsupported_content_encoding"),
    ("gzip, br", PACKED, 415, "unsupported_content_encoding"),
    ("gzip, gzip, gzip, gzip", PACKED, 415, "unsupported_content_encoding"),
    ("gzip", b"\x1f\x8b\x08\x00garbage", 400, "invalid_content_encoding"),
    ("gzip", PACKED[:-9], 400, "invalid_content_encoding"),                   # cut short
    ("gzip", PACKED + b"trailing", 400, "invalid_content_encoding"),
    ("gzip", FINE, 400, "invalid_content_encoding"),                           # says gzip, is not
    ("deflate", b"\x78\x9cnot deflate", 400, "invalid_content_encoding"),
])
def test_a_body_it_cannot_read_is_refused_naming_content_encoding(tmp_home, up, header, body, status,
                                                                    kind) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    before = status_fields(tmp_home)
    with running_chain_proxy(tmp_home) as p:
        r = post(p, body, {"Content-Encoding": header})
        msgs = post(p, body, {"Content-Encoding": header}, "/messages")
    err = r.json()["error"]
    assert r.status_code == status and err["type"] == kind and err["param"] == "Content-Encoding"
    assert "Content-Encoding" in err["message"]
    assert msgs.status_code == status and msgs.json()["error"]["kind"] == kind
    assert up.seen == [] and status_fields(tmp_home) == before        # nothing went on, no key benched


def test_a_request_without_a_body_is_not_refused_for_its_coding(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = httpx.get(p.url + "/models", headers={"Content-Encoding": "br"}, timeout=20)
    assert r.status_code == 200 and len(up.seen) == 1


def test_every_content_encoding_header_counts(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    bad = gzip.compress(json.dumps({"model": "A" * 300, "messages": []}).encode())
    with running_chain_proxy(tmp_home) as p:
        r = post(p, bad, [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")])
        ok = post(p, PACKED, [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")])
    assert r.status_code == 400 and r.json()["error"]["param"] == "model"
    assert ok.status_code == 200 and [s.body for s in up.seen] == [PACKED]


def test_several_gzip_members_are_read_as_one_body(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    doc = json.dumps({"model": "A" * 300, "messages": []}).encode()
    split = gzip.compress(doc[:20]) + gzip.compress(doc[20:])
    with running_chain_proxy(tmp_home) as p:
        r = post(p, split, {"Content-Encoding": "gzip"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "model" and up.seen == []


def test_a_server_that_decodes_bodies_has_its_lie_refused_at_the_door(tmp_home, up, monkeypatch) -> None:
    """With aiohttp decoding the body, the door sees JSON under ``Content-Encoding: gzip``:
    it refuses it rather than forward a body that is not what its header says."""
    monkeypatch.setattr(ProxyServer, "app", lambda self: web.Server(self.handle, access_log=None))
    edge_seed(tmp_home, up.url, keys=1, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = post(p, PACKED, {"Content-Encoding": "gzip"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_content_encoding" and up.seen == []


# --- a model named twice --------------------------------------------------------------------------------

TWICE = [
    '{"model": "' + "A" * 300 + '", "model": "m", "messages": []}',
    '{"model": "bad\\u0001name", "model": "m", "messages": []}',
    '{"m\\u006fdel": "' + "A" * 300 + '", "model": "m", "messages": []}',
    '{"model": "' + "A" * 300 + '", "model": 5, "messages": []}',
    '{"model": "m", "messages": [], "model": "m"}',
]


@pytest.mark.parametrize("doc", TWICE)
@pytest.mark.parametrize("how", ["identity", "gzip"])
def test_a_body_naming_model_twice_is_refused(tmp_home, up, doc, how) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = post(p, *pack(doc.encode(), how))
    err = r.json()["error"]
    assert r.status_code == 400 and err["type"] == "invalid_model" and err["param"] == "model"
    assert up.seen == []


def test_a_nested_model_is_not_a_second_one(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    doc = {"model": "m", "messages": [{"role": "model", "content": "hi"}], "metadata": {"model": "x" * 300}}
    with running_chain_proxy(tmp_home) as p:
        r = post(p, json.dumps(doc).encode(), {})
    assert r.status_code == 200 and len(up.seen) == 1


# --- a body only a lenient reader reads -----------------------------------------------------------

LONG = json.dumps({"model": "A" * 300, "messages": []}).encode()


@pytest.mark.parametrize("body, head", [
    (LONG + b" trailing", {}),                                               # a reader that stops after a value
    (LONG + b"\x00", {}),
    (gzip.compress(LONG, mtime=0) + gzip.compress(b" trailing", mtime=0), {"Content-Encoding": "gzip"}),  # a member
    (b'[{"model": "' + b"A" * 300 + b'"}', {}),                             # cut short
])
def test_a_bad_name_in_a_body_that_is_not_json_is_refused(tmp_home, up, body, head) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = post(p, body, head)
        ok = post(p, b'{"model": "m"} trailing', {})      # not JSON, a fine name: the upstream judges it
    assert r.status_code == 400 and r.json()["error"]["param"] == "model"
    assert ok.status_code == 200 and [s.body for s in up.seen] == [b'{"model": "m"} trailing']


# --- controls ---------------------------------------------------------------------------------------

def test_control_a_door_that_does_not_decode_lets_the_bad_name_through(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(door, "decoded", lambda body, applied, cap: body)
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home) as p:
        r = post(p, *pack(json.dumps({"model": "A" * 300, "messages": []}).encode(), "gzip"))
    assert r.status_code == 200 and len(up.seen) == 1
    assert json.loads(gzip.decompress(up.seen[0].body))["model"] == "A" * 300


def test_control_the_last_model_alone_passes_a_body_named_twice(monkeypatch) -> None:
    body = TWICE[0].encode()
    assert door.bad_model(body, "m") is not None
    monkeypatch.setattr(door, "_parsed", lambda body: None)
    assert door.bad_model(body, "m") is None
