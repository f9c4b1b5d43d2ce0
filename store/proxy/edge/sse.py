"""What a relayed stream (SSE) is made of, as far as the proxy must know: redaction over
the whole stream, where its events end, and the proxy's own error event in each
protocol's form.

- :class:`StreamRedaction`: the row's own secret hidden over the stream, not per chunk,
  with or without its prefix, plain or JSON-escaped (:class:`OwnToken`). A chunk's tail
  that may begin the secret is held back (at most the secret's length less one byte; six
  times that when a backslash is near the end, as an escape may begin it) until the next
  chunk shows whether it does; a key holds no line break, so nothing is ever held across an
  event boundary, and the end of the stream flushes it.
- :class:`Framing`: the event left open by what reached the client; an upstream cut
  mid-event leaves a partial event, made the proxy's error event itself
  (:mod:`store.proxy.edge.sse_close`: its cut JSON completed, its name the protocol's error
  event) so the SDKs raise the proxy's error, not a decode error of the partial data.
- :func:`error_event`: that error event as each protocol's SDKs raise it: Anthropic's
  ``event: error``, a Chat Completions chunk holding ``error``, a Responses
  ``response.failed`` (with the ``error`` object too, which the ``openai`` SDK raises on).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp import web

from store.proxy.edge.anthropic import error_type
from store.proxy.edge.sse_close import EVENT_CAP, closing
from store.proxy.edge.wire import OwnToken
from store.proxy.routing.protocols import ANTHROPIC, OPENAI, PROTOCOL_OF, RESPONSES

BOUNDARIES = (b"\n\n", b"\r\r", b"\r\n\r\n")


class StreamRedaction:
    """The row's secret (*own*) replaced by its fingerprint over a whole stream, however the
    upstream's chunks split it. ``held`` is the number of bytes held back now."""

    __slots__ = ("own", "_secret", "_bare", "_window", "_pending")

    def __init__(self, own: OwnToken) -> None:
        self.own = own
        self._secret = own.secret
        self._bare = own.bare if own.bare != own.secret else b""
        self._window = 6 * len(own.secret) - 1     # the longest escaped form less one byte
        self._pending = b""

    @property
    def held(self) -> int:
        return len(self._pending)

    def feed(self, data: bytes) -> bytes:
        """What of *data* (and what was held) may go to the client now."""
        secret = self._secret
        if not secret:
            return data
        if self._pending:
            data, self._pending = self._pending + data, b""
        data = self.own.hide(data)
        keep = self._tail(data)
        if keep:
            self._pending = data[-keep:]
            return data[:-keep]
        return data

    def flush(self) -> bytes:
        """What is held, at the end of the stream (it was not the secret)."""
        out, self._pending = self._pending, b""
        return out

    def _tail(self, data: bytes) -> int:
        """The length of *data*'s end that may begin the secret or its bare part (0: none):
        the longest end that begins either as written; when a backslash is near the end (a
        JSON escape may begin the secret), all of the last escaped secret's length less one
        byte that follows the last line break (a key, escaped or not, holds none)."""
        n = len(data)
        start = max(0, n - self._window)
        if data.find(b"\\", start) >= 0:
            brk = max(data.rfind(b"\n", start), data.rfind(b"\r", start))
            return n - max(start, brk + 1)
        keep = _begins(data, self._secret)
        return max(keep, _begins(data, self._bare)) if self._bare else keep


def _begins(data: bytes, secret: bytes) -> int:
    """The length of *data*'s longest end that begins *secret* (0: none): the leftmost such
    start in the last (secret's length - 1) bytes."""
    n = len(data)
    i = data.find(secret[0], max(0, n - len(secret) + 1))
    while i >= 0:
        if secret.startswith(data[i:]):
            return n - i
        i = data.find(secret[0], i + 1)
    return 0


class Framing:
    """What the bytes that reached the client left open: the event since the last boundary
    (at most :data:`~store.proxy.edge.sse_close.EVENT_CAP` bytes of it are kept)."""

    __slots__ = ("_partial", "_over")

    def __init__(self) -> None:
        self._partial = bytearray()    # nothing sent yet: at a boundary (appends amortised)
        self._over = False             # the open event passed the cap: its start is gone

    def note(self, data: bytes) -> None:
        """*data* reached the client."""
        if not data:
            return
        if data.endswith(BOUNDARIES):           # the usual chunk: whole events
            self._partial.clear()
            self._over = False
            return
        look = bytes(self._partial[-3:]) + data   # a boundary may straddle two writes
        end = max((i + len(b) for b in BOUNDARIES if (i := look.rfind(b)) >= 0), default=-1)
        if end >= 0:
            self._partial, self._over = bytearray(look[end:]), False
        elif self._over or len(self._partial) + len(data) > EVENT_CAP:
            self._partial, self._over = bytearray(look[-3:]), True
        else:
            self._partial += data

    def ending(self, path: str, message: str, kind: str, code: int, rid: str) -> bytes:
        """What the client gets after the bytes it has: the partial event made the proxy's
        error event (:func:`store.proxy.edge.sse_close.closing`), or closed and followed by
        it; at a boundary, the error event alone."""
        event, data = error_data(path, message, kind, code, rid)
        own = _event(event, data)
        if self._over:
            return b"\n\n" + own
        close, is_error = closing(bytes(self._partial), event, data)
        return close if is_error else close + own


def error_data(path: str, message: str, kind: str, code: int, rid: str) -> tuple[str | None, dict[str, Any]]:
    """The proxy's error event for a stream on *path*: its name (None: no ``event:`` field)
    and its data, in the protocol's form."""
    protocol = PROTOCOL_OF.get(path, OPENAI)
    if protocol == ANTHROPIC:
        return "error", {"type": "error", "error": {"type": error_type(code), "message": message},
                         "request_id": rid}
    err = {"message": message, "type": kind, "code": code, "request_id": rid}
    if protocol == RESPONSES:
        return "response.failed", {"type": "response.failed", "response": {
            "object": "response", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": message}}, "error": err}
    return None, {"error": err}


def error_event(path: str, message: str, kind: str, code: int, rid: str) -> bytes:
    """The proxy's error event for a stream on *path*, in its protocol's form."""
    return _event(*error_data(path, message, kind, code, rid))


def _event(name: str | None, data: dict[str, Any]) -> bytes:
    head = b"" if name is None else b"event: " + name.encode() + b"\n"
    return head + b"data: " + json.dumps(data).encode() + b"\n\n"


async def write_error(resp: web.StreamResponse, data: bytes) -> None:
    """Write the closing bytes and error event *data* on a stream already begun; at most a
    second's wait for a slow client, nothing when it has gone."""
    try:
        async with asyncio.timeout(1.0):
            await resp.write(data)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError, TimeoutError, RuntimeError):
        pass
