"""What goes over the wire: headers kept or dropped, the raw query, OpenAI-shaped error
bodies, a provider's error answer read into the agent's
:class:`~store.agent.outcomes.Result` and relayed without a key in it, and what kind of
no-answer an exception of the upstream session is.

Forwarding is faithful (RELIABILITY 41): every header is passed on except the hop-by-hop
ones (and any the ``Connection`` header names), the client's own credentials (the upstream
gets the row's key instead), ``Accept-Encoding`` and ``Expect`` (the proxy reads error
answers to judge and redact them, so it asks for them plain, and it has the whole body
before it sends), and what aiohttp computes itself. The query string goes on byte for
byte, the body as it came, with its ``Content-Encoding``.

Relayed answers carry no key (RELIABILITY 39): an error body and every header of an
answer pass the redactor, with the row's own secret added to it.
"""

from __future__ import annotations

import json
import re
import ssl
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from store.agent.outcomes import CONNECT, MALFORMED, RESET, TIMEOUT, TLS, TRUNCATED, Result
from store.redaction.fingerprints import ELLIPSIS, fingerprint
from store.redaction.redact import KEY_PATTERNS

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                        "trailer", "upgrade", "proxy-authorization", "proxy-authenticate"})
DROP_REQUEST = HOP_BY_HOP | {"authorization", "host", "content-length", "accept-encoding", "cookie",
                             "x-api-key", "expect"}
DROP_RESPONSE = HOP_BY_HOP | {"content-length", "date", "server", "set-cookie"}
H_POOL, H_CRED, H_FALLBACK, H_ROUTE = ("X-Hermes-Pool", "X-Hermes-Credential", "X-Hermes-Fallback",
                                       "X-Hermes-Route")
H_REQUEST_ID = "X-Hermes-Request-Id"
ERROR_CAP = 1 << 20      # an upstream's error answer is read up to this; beyond it is not relayed
MATCH_CAP = 64 * 1024    # how much of an error answer the classifier reads
_KEY_SHAPE = re.compile("|".join(f"(?:{p.pattern})" for p in KEY_PATTERNS))
_META = set("[](){}\\.*+?|^$")


def _heads(pattern: str) -> list[str] | None:
    """The literal text every match of *pattern* starts with (``sk-``; ``ghp``/``gho``...
    for ``gh[pousr]``; each of ``(?:nvapi|pplx|fw)-``), or None when it cannot tell."""
    if pattern.startswith("(?<!"):
        pattern = pattern[pattern.index(")") + 1:]
    if pattern.startswith("(?:"):
        alts, _, rest = pattern[3:].partition(")")
        if not rest or any(c in _META for c in alts.replace("|", "")):
            return None
        tail = _heads(rest) or [""]
        return [a + t for a in alts.split("|") for t in tail]
    i = 0
    while i < len(pattern) and pattern[i] not in _META:
        i += 1
    head, rest = pattern[:i], pattern[i:]
    if rest.startswith("[") and "]" in rest and rest.index("]") > 1:
        chars = rest[1:rest.index("]")]
        if chars.isalpha():
            return [head + c for c in chars]
    return [head] if head else None


def _all_heads() -> tuple[str, ...] | None:
    found: list[str] = []
    for p in KEY_PATTERNS:
        heads = _heads(p.pattern)
        if heads is None:
            return None            # a shape without a literal head: always run the full search
        found.extend(heads)
    return tuple(found)


# A success's headers are checked for key shapes on every request: a plain substring test
# for the literal heads of the key patterns (about 2 us) before the full search (10-40 us).
KEY_HEADS = _all_heads()
MIN_KEY_LEN = 11       # no key shape (nor a token worth hiding) is shorter: eyJ + 8
_UNSAFE_IN_HEADER = re.compile(r"[^\x20-\x7e]")


def kept(headers: Any, drop: frozenset[str]) -> CIMultiDict[str]:
    """*headers* (every value, repeated names too, in order) without *drop* (lower-case
    names) and what ``Connection`` names. A copy in C and one removal per dropped name: a
    third of the cost of a header-by-header copy, on every request and every answer."""
    out: CIMultiDict[str] = CIMultiDict(headers)
    popall = out.popall
    for name in drop:
        popall(name, None)
    if "Connection" in headers:
        for value in headers.getall("Connection"):
            for token in value.split(","):
                token = token.strip().lower()
                if token and token not in drop:
                    popall(token, None)
    return out


def redacted_headers(headers: CIMultiDict[str], token: str, redact: Callable[[], Callable[[str], str]],
                     *, every: bool = False) -> None:
    """Fingerprint, in place, the keys in *headers*. A success's headers (the fast path) are
    checked for *token* (the row's) and key shapes at the cost of one scan, and only then is
    *redact()* built and applied; with *every* (an error answer, rare) each value passes
    *redact()*, which knows every secret of the home."""
    if not every:
        joined = "\n".join([v for v in headers.values() if len(v) >= MIN_KEY_LEN])   # a list: one call
        if not ((token and token in joined) or key_shaped(joined)):
            return
    fn = redact()
    items = list(headers.items())
    headers.clear()
    for k, v in items:      # a fingerprint's ellipsis in ASCII: headers are not for UTF-8
        headers.add(k, header_value(fn(v).replace(ELLIPSIS, "...")))


def key_shaped(text: str) -> bool:
    """Whether *text* holds anything shaped like a key (:data:`KEY_PATTERNS`)."""
    if KEY_HEADS is None:
        return _KEY_SHAPE.search(text) is not None
    for head in KEY_HEADS:      # a loop, not any() over a generator: 0.6 us less a request
        if head in text:
            return _KEY_SHAPE.search(text) is not None
    return False


class OwnToken:
    """The row's own secret in a relayed 2xx body, as its fingerprint.

    A success's body is the model's output, where key-shaped text may well belong (code,
    examples), so only the token this request was sent with is hidden: an upstream has no
    business echoing it. One bytes search per body; a stream is redacted over its chunks
    (:class:`store.proxy.edge.sse.StreamRedaction`), so a token split across them is seen too.

    Hidden too: the token without its provider prefix (``bare``: what follows the leading
    short lower-case segments such as ``sk-or-v1-``, when at least :data:`BARE_MIN` long: the
    key's randomness), and either written with JSON escapes (``\\u0041`` for ``A``, any
    character, any number of them), which a client's JSON decoding turns back into the key.
    Bytes without a ``\\u`` escape take the plain search alone (:meth:`hide`)."""

    __slots__ = ("secret", "shown", "bare", "_escaped")

    def __init__(self, token: str) -> None:
        self.secret = token.encode("utf-8", "surrogateescape") if len(token) >= 8 else b""
        self.shown = (fingerprint(token) or "").encode() if self.secret else b""
        self.bare = bare_part(self.secret) or self.secret
        self._escaped: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None = None

    def hide(self, data: bytes) -> bytes:
        secret = self.secret
        if not secret:
            return data
        if b"\\u" in data and self.escaped()[0].search(data):   # an escape of one of its characters
            return self._escaped[1].sub(self.shown, data)    # (the pattern matches the plain forms too)
        if self.bare in data:      # the bare part is in the whole key: one search for either
            data = data.replace(secret, self.shown).replace(self.bare, self.shown)
        return data

    def escaped(self) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
        """An escape of a character of the secret (what the slow path needs: text in other
        languages, escaped as JSON, is not for it), and the secret or its bare part with any
        of their characters written as a JSON escape."""
        if self._escaped is None:
            prefix = self.secret[:len(self.secret) - len(self.bare)]
            head = b"(?:" + b"".join(map(_any_form, prefix)) + b")?" if prefix else b""
            codes = b"|".join(sorted({b"%02x" % c for c in self.secret if c < 0x80}))
            self._escaped = (re.compile(b"\\\\u00(?:" + codes + b")", re.IGNORECASE),
                             re.compile(head + b"".join(map(_any_form, self.bare))))
        return self._escaped


BARE_MIN = 16      # a key's part without its prefix, hidden on its own only from this length
_PREFIX = re.compile(rb"(?:[a-z0-9]{1,8}[-_])+")


def bare_part(secret: bytes) -> bytes:
    """*secret* without its provider prefix (``sk-or-v1-``, ``sk-ant-api03-``, ``ghp_``...):
    its randomness; empty when there is no prefix or what remains is under :data:`BARE_MIN`."""
    m = _PREFIX.match(secret)
    if m is None or len(secret) - m.end() < BARE_MIN:
        return b""
    return secret[m.end():]


def _any_form(ch: int) -> bytes:
    """A pattern for the byte *ch* as it is or, for ASCII, as a JSON ``\\uXXXX`` escape."""
    plain = re.escape(bytes([ch]))
    if ch >= 0x80:
        return plain
    hexes = b"".join(b"[%s%s]" % (c.encode(), c.upper().encode()) if c.isalpha() else c.encode()
                     for c in f"{ch:04x}")
    return b"(?:" + plain + b"|\\\\u" + hexes + b")"


def header_value(text: str) -> str:
    """*text* safe as a header value: anything but printable ASCII (CR, LF, NUL, …) escaped."""
    return _UNSAFE_IN_HEADER.sub(lambda m: f"%{ord(m.group(0)):02X}" if ord(m.group(0)) < 256
                                 else f"%u{ord(m.group(0)):04X}", text)


def raw_query(request: web.BaseRequest) -> str:
    """``?`` and the query exactly as the client sent it (aiohttp's ``query_string`` is
    decoded: ``%23`` would come out as ``#`` and end the URL)."""
    raw = request.raw_path
    i = raw.find("?")
    return "" if i < 0 else raw[i:]


class UpstreamUrls:
    """Upstream URLs: each base parsed once and kept (bounded by rows), the path and raw
    query appended as they are (``encoded``: yarl must not requote them). A user and
    password in a base URL are dropped: the request carries the row's key as its one
    ``Authorization``, and aiohttp refuses to send both."""

    def __init__(self, cap: int = 256) -> None:
        self.cap = cap
        self._bases: dict[str, str] = {}
        self._urls: dict[str, URL] = {}

    def get(self, base: str, tail: str) -> URL:
        url = self._urls.get(base + tail)
        if url is not None:
            return url
        encoded = self._bases.get(base)
        if encoded is None:
            if len(self._bases) >= self.cap:
                self._bases.clear()
            encoded = self._bases[base] = str(URL(base).with_user(None))
        url = URL(encoded + tail, encoded=True)
        if "?" not in tail:
            if len(self._urls) >= self.cap:
                self._urls.clear()
            self._urls[base + tail] = url
        return url


class ProxyError(web.Response):
    """An error answer the proxy made itself; ``error`` is its error object, so the Anthropic
    paths can give it in their own shape (:func:`store.proxy.edge.anthropic.shaped`)."""

    def __init__(self, err: dict[str, Any], status: int) -> None:
        super().__init__(body=json.dumps({"error": err}).encode(), status=status, content_type="application/json")
        self.error = err


def error_body(status: int, message: str, kind: str, request_id: str | None = None,
               **extra: Any) -> web.Response:
    """An OpenAI-shaped JSON error (with the request id the log line carries)."""
    err = {"message": message, "type": kind, "code": status, **extra}
    if request_id is not None:
        err["request_id"] = request_id
    resp = ProxyError(err, status)
    if request_id is not None:
        resp.headers[H_REQUEST_ID] = request_id
    return resp


def with_model(body: bytes, model: str) -> bytes:
    """The request with the fallback entry's model in place of the client's."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    data["model"] = model
    return json.dumps(data).encode()


def plain(raw: bytes, encoding: str) -> bytes | None:
    """An error answer decoded from its ``Content-Encoding`` (gzip, deflate), None when the
    proxy cannot read that encoding (it then cannot check the answer for keys)."""
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return raw
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, ERROR_CAP)
        if enc == "deflate":
            return zlib.decompressobj().decompress(raw, ERROR_CAP)
    except zlib.error:
        return None
    return None


def result_of(status: int, headers: Any, raw: bytes) -> Result:
    """What the agent's rules need from an error answer: status, headers, reason, message,
    the provider's metadata and the text to match."""
    reason = message = reset_at = meta = None
    text = raw[:MATCH_CAP].decode("utf-8", "replace")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        code, kind = err.get("code"), err.get("type")
        reason = str(code) if isinstance(code, str) and code else (str(kind) if isinstance(kind, str) and kind
                                                                   else None)
        message = str(err.get("message") or "")[:4096] or None
        meta = err.get("metadata") if isinstance(err.get("metadata"), dict) else None
        reset_at = meta.get("reset_at") if meta is not None else None
    elif isinstance(err, str):
        message = err[:4096]
    elif isinstance(data, dict) and isinstance(data.get("message"), str):
        message = data["message"][:4096]
    return Result(status, dict(headers), reason, message, reset_at, metadata=meta, text=text,
                  structured=isinstance(data, dict))


def redact_body(raw: bytes, secrets: Iterable[Callable[[str], str]]) -> bytes:
    """*raw* (UTF-8, or bytes kept as they are) with each redactor of *secrets* applied, to
    the text as it is and, when it holds a ``\\u`` escape, to each JSON string decoded (a
    string that changed is written again, ASCII-escaped): a secret written with JSON escapes
    is a secret to the client that decodes them."""
    text = raw.decode("utf-8", "surrogateescape")
    out = text
    for redact in secrets:
        out = redact(out)
        if "\\u" in out:
            out = _JSON_STRING.sub(lambda m, fn=redact: _decoded_redacted(m.group(0), fn), out)
    return raw if out == text else out.encode("utf-8", "surrogateescape")


_JSON_STRING = re.compile(r'"(?:[^"\\\r\n]|\\.)*"')


def _decoded_redacted(literal: str, redact: Callable[[str], str]) -> str:
    """The JSON string *literal* with *redact* applied to what it decodes to (unchanged
    when nothing in it was a secret)."""
    if "\\u" not in literal:
        return literal
    try:
        value = json.loads(literal)
    except ValueError:
        return literal
    hidden = redact(value)
    return literal if hidden == value else json.dumps(hidden)


def transport_kind(exc: BaseException) -> str:
    """What kind of no-answer *exc* is (the Result's ``transport``)."""
    if isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)):
        return TLS
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    if isinstance(exc, aiohttp.ClientPayloadError):
        return TRUNCATED
    if isinstance(exc, (aiohttp.ServerDisconnectedError, ConnectionResetError, aiohttp.ClientOSError)) \
            and not isinstance(exc, aiohttp.ClientConnectorError):
        return RESET
    if isinstance(exc, aiohttp.ClientResponseError):
        return MALFORMED
    return CONNECT


@dataclass
class Answer:
    """An upstream's error answer as received (relayed only once redacted)."""

    status: int
    headers: Any
    raw: bytes
    over_cap: bool = False
