"""What every request passes before the chain: the inbound key, the body's size and how long
it takes to arrive, the model name it asks for, and the answer that refuses it when it fails
one of them.

The model name is bounded before anything is forwarded (:func:`bad_model`): at most
:data:`MODEL_CAP` characters and no control characters, or a 400 naming ``model``. A name
goes into the request log, the status file and, with a per-model bench, into auth.json:
unbounded, one hostile client on loopback could fill the store. The body is parsed once
here (:func:`~store.proxy.routing.protocols.model_of`), and the model it names is checked
and handed on to the chain (:class:`~store.proxy.routing.protocols.Want`), which needs it
anyway; a body that fast parse cannot read is scanned for ``"model": "..."`` instead.

A gzip or deflate body is decoded to read its model, bounded by the body cap
(:mod:`store.proxy.edge.coding`: a bomb is a 413 at the cap, a coding the proxy cannot read
a 415, a body that does not decode a 400); the model read is the chain's as for a plain
body (a 429 benches that model, not the key), and the bytes that go on are the ones that came.
A body whose top-level object names ``model`` twice is refused as well: one upstream reads
the first, ``json.loads`` the last. The fast path stays a scan for a second ``"model"`` (or
an escaped letter of it); only such a body is parsed with every key kept.

Every refusal is an answer with the request id the log line carries (RELIABILITY 43). A key
is a bearer, or on the Anthropic paths ``x-api-key`` (what the Anthropic SDKs and Claude Code
send); the key itself is never logged or echoed.

A request aiohttp cannot even parse (a bad header line, which may carry a client key) is
answered by :class:`ProxyHttpServer`'s handler: aiohttp's own answer echoes the bad line,
this one passes it through the proxy's redactor (which knows the client keys and masks what
follows ``Authorization``/``x-api-key``) and gives it as JSON; aiohttp's log line about it goes
through the same redactor (:class:`store.redaction.crash.LogRedaction` on its logger).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import unicodedata
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from store.proxy.edge.coding import Refused, codings, decoded
from store.proxy.edge.inbound import Gate
from store.proxy.edge.wire import error_body
from store.proxy.observing.requests import answered_as
from store.proxy.routing.protocols import ANTHROPIC, model_of

log = logging.getLogger("hermes_admin.proxy")
MODEL_CAP = 256           # characters in a model name
_MODEL_VALUE = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.)*)"')
_PLAIN = re.compile(rb"[\x20-\x7e]*")
_CONTROLS = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_ESCAPED = b"\\u006"   # a key's m, o, d, e or l written as an escape ("m\\u006fdel"): parsed to see it


def bad_model(body: bytes, model: str | None = None) -> str | None:
    """What is wrong with the ``model`` a JSON *body* names (too long, a control character,
    named twice), or None (fine, or none named); *model*:
    the name :func:`~store.proxy.routing.protocols.model_of` read from *body*, if it read one."""
    if model is not None:
        if len(model) > MODEL_CAP or not model.isascii() or not model.isprintable():
            return _wrong(model)
        i = body.find(b'"model"')
        if i >= 0 and body.find(b'"model"', i + 7) < 0 and _ESCAPED not in body:
            return None               # a short, plain ASCII name, named once: the fast path
        return _parsed(body)
    i = body.find(b'"model"')
    while i >= 0:
        m = _MODEL_VALUE.match(body, i)
        if m is not None:
            raw = m.group(1)
            if len(raw) > MODEL_CAP or b"\\" in raw or not _PLAIN.fullmatch(raw):
                break
        i = body.find(b'"model"', i + 7)
    else:
        if _ESCAPED not in body:
            return None               # every model string is short, plain ASCII: the fast path
    return _parsed(body)


def _parsed(body: bytes) -> str | None:
    """:func:`bad_model` on the parsed *body*: every ``model`` of its top-level object (a
    reader may take the first of two, ``json.loads`` takes the last), or None (not JSON)."""
    top: list[Any] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        top[:] = [v for k, v in items if k == "model"]     # the top-level object is the last one closed
        return dict(items)

    try:
        data = json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return _scanned(body)
    if not isinstance(data, dict):
        return None
    if len(top) > 1:
        return f"model: a request body names model once; this one names it {len(top)} times"
    return _wrong(top[0]) if top and isinstance(top[0], str) else None


def _scanned(body: bytes) -> str | None:
    """:func:`bad_model` on a body that is not JSON to ``json.loads``, which a lenient reader
    may still read (one that stops after the first value, or reads one gzip member): each
    ``"model": "..."`` in it is bounded as a name."""
    for m in _MODEL_VALUE.finditer(body):
        raw = m.group(1)
        try:
            name = json.loads(b'"' + raw + b'"')
        except ValueError:
            name = raw.decode("utf-8", "replace")
        if (problem := _wrong(name)) is not None:
            return problem
    return None


def _wrong(model: str) -> str | None:
    if len(model) > MODEL_CAP:
        return f"model: a model name is at most {MODEL_CAP} characters; this one has {len(model)}"
    for i, ch in enumerate(model):
        if unicodedata.category(ch) in _CONTROLS:
            return f"model: a model name holds no control characters; this one has U+{ord(ch):04X} at {i}"
    return None


class Door:
    """The proxy's inbound checks, for one proxy (*rid*: a request number's id)."""

    def __init__(self, gate: Gate, body_cap: int, body_timeout: float, rid: Callable[[int], str]) -> None:
        self.gate = gate
        self.body_cap = body_cap
        self.body_timeout = body_timeout
        self.rid = rid

    def refuse(self, n: int, status: int, message: str, kind: str, **extra: Any) -> web.Response:
        rid = self.rid(n)
        log.info("request %s: %d %s", rid, status, kind)
        answered_as(kind)
        return error_body(status, message, kind, rid, **extra)

    def allowed(self, request: web.BaseRequest, protocol: str) -> bool:
        """The inbound key: a bearer, or on the Anthropic paths ``x-api-key`` (what the
        Anthropic SDKs and Claude Code send)."""
        if self.gate.allows(request.headers.get("Authorization")):
            return True
        key = request.headers.get("x-api-key") if protocol == ANTHROPIC else None
        return key is not None and self.gate.allows("Bearer " + key)

    async def body(self, request: web.BaseRequest, n: int) -> tuple[bytes, str | None] | web.StreamResponse:
        """The request body as it came (still encoded) and the model it names (None: none), or
        the answer that refuses it. A gzip or deflate body is decoded (bounded by the body cap)
        to read its model; the bytes that go on are the ones that came (:mod:`.coding`)."""
        try:
            if request.content.is_eof():      # all there already (most requests): no timer
                raw = await request.read()
            else:
                async with asyncio.timeout(self.body_timeout):
                    raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self.too_large(n)
        except TimeoutError:
            resp = self.refuse(n, 408, f"the request body did not arrive within {self.body_timeout:g} s",
                               "request_timeout")
            resp.force_close()
            return resp
        except (web.RequestPayloadError, aiohttp.ClientPayloadError, ConnectionError) as exc:
            resp = self.refuse(n, 400, f"the request body was cut or malformed ({type(exc).__name__})",
                               "bad_request_body")
            resp.force_close()
            return resp
        plain = raw
        if "Content-Encoding" in request.headers:     # read as the upstream will, bounded by the cap
            try:
                plain = decoded(raw, codings(request.headers), self.body_cap)
            except Refused as exc:
                return self.refuse(n, exc.status, exc.message, exc.kind, param="Content-Encoding")
        model = model_of(plain)
        problem = bad_model(plain, model)
        if problem is not None:
            return self.refuse(n, 400, problem, "invalid_model", param="model")
        return raw, model

    def too_large(self, n: int) -> web.Response:
        return self.refuse(n, 413, f"request body over {self.body_cap // (1024 * 1024)} MB", "request_too_large")


class ProxyHttpServer(web.Server):
    """aiohttp's low-level server whose answer to a request it cannot parse is redacted
    with *redact* (text in, text out) and JSON-shaped."""

    def __init__(self, handler: Any, *, redact: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.redact = redact

    def __call__(self) -> RequestHandler:
        return _RedactingHandler(self, loop=self._loop, **self._kwargs)


class _RedactingHandler(RequestHandler):
    def __init__(self, manager: ProxyHttpServer, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.redact = manager.redact

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        # aiohttp logs it (through the log's redaction) and refuses when bytes went out already.
        super().handle_error(request, status, exc, message)
        if status >= 500 or not message:
            text, kind = "internal error in the hermes-admin proxy's HTTP server", "proxy_error"
        else:
            text, kind = "malformed HTTP request: " + self.redact(" ".join(message.split())), "bad_http_request"
        answered_as(kind)
        resp = error_body(status, text, kind)
        resp.force_close()
        return resp
