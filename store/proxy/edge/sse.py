"""What a relayed stream (SSE) is made of, as far as the proxy must know: redaction over
the whole stream, where its events end, and the proxy's own error event in each
protocol's form.

- :class:`StreamRedaction`: the row's own secret hidden over the stream, not per chunk.
  A chunk's tail that may begin the secret is held back (at most the secret's length less
  one byte) until the next chunk shows whether it does; a key holds no line break, so
  nothing is ever held across an event boundary, and the end of the stream flushes it.
- :class:`Framing`: whether what reached the client ends at an event boundary; an upstream
  cut mid-event leaves a partial event, closed (``\\n\\n``) before the proxy's error event,
  which would otherwise be glued onto the partial line and lost.
- :func:`error_event`: that error event as each protocol's SDKs raise it: Anthropic's
  ``event: error``, a Chat Completions chunk holding ``error``, a Responses
  ``response.failed`` (with the ``error`` object too, which the ``openai`` SDK raises on).
"""

from __future__ import annotations

import asyncio
import json

import aiohttp
from aiohttp import web

from store.proxy.edge.anthropic import error_type
from store.proxy.edge.wire import OwnToken
from store.proxy.routing.protocols import ANTHROPIC, OPENAI, PROTOCOL_OF, RESPONSES

BOUNDARIES = (b"\n\n", b"\r\r", b"\r\n\r\n")


class StreamRedaction:
    """The row's secret (*own*) replaced by its fingerprint over a whole stream, however the
    upstream's chunks split it. ``held`` is the number of bytes held back now."""

    __slots__ = ("own", "_secret", "_shown", "_pending")

    def __init__(self, own: OwnToken) -> None:
        self.own = own
        self._secret = own.secret
        self._shown = own.shown
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
        if secret in data:
            data = data.replace(secret, self._shown)
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
        """The length of *data*'s longest end that begins the secret (0: none): the
        leftmost such start in the last (secret's length - 1) bytes."""
        secret = self._secret
        n = len(data)
        i = data.find(secret[0], max(0, n - len(secret) + 1))
        while i >= 0:
            if secret.startswith(data[i:]):
                return n - i
            i = data.find(secret[0], i + 1)
        return 0


class Framing:
    """Whether the bytes that reached the client end at an event boundary."""

    __slots__ = ("_tail",)

    def __init__(self) -> None:
        self._tail = b"\n\n"           # nothing sent yet: a boundary

    def note(self, data: bytes) -> None:
        """*data* reached the client."""
        if data:
            self._tail = (self._tail + data[-4:])[-4:]

    def close(self) -> bytes:
        """What closes a partial event (``\\n\\n``), or nothing at a boundary."""
        return b"" if self._tail.endswith(BOUNDARIES) else b"\n\n"


def error_event(path: str, message: str, kind: str, code: int, rid: str) -> bytes:
    """The proxy's error event for a stream on *path*, in its protocol's form."""
    protocol = PROTOCOL_OF.get(path, OPENAI)
    if protocol == ANTHROPIC:
        data = {"type": "error", "error": {"type": error_type(code), "message": message}, "request_id": rid}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    err = {"message": message, "type": kind, "code": code, "request_id": rid}
    if protocol == RESPONSES:
        failed = {"type": "response.failed", "response": {
            "object": "response", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": message}}, "error": err}
        return b"event: response.failed\ndata: " + json.dumps(failed).encode() + b"\n\n"
    return b"data: " + json.dumps({"error": err}).encode() + b"\n\n"


async def write_error(resp: web.StreamResponse, data: bytes) -> None:
    """Write the closing bytes and error event *data* on a stream already begun; at most a
    second's wait for a slow client, nothing when it has gone."""
    try:
        async with asyncio.timeout(1.0):
            await resp.write(data)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError, TimeoutError, RuntimeError):
        pass
