"""A scripted upstream on raw sockets, for the proxy's edge tests.

Unlike the fake provider (a well-behaved HTTP server), this one answers exactly the bytes
it is told to: a status with any headers and body, garbage instead of a status line, a
reset, a stall, a body cut short, a stream broken midway. Each request is read (request
line, headers, a Content-Length body), recorded byte for byte, then answered by the next
behaviour scripted for its bearer key (or the default one).

    with ScriptedUpstream() as up:
        up.script(KEY, http(429, {"Retry-After": "1e290"}, {"error": {...}}), http(200))
        ... point a row's base_url at up.url ...
        up.seen            # [Seen(method, target, headers, body, key)]

Runs on its own event loop in a daemon thread; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

OK_BODY = {"id": "chatcmpl-up", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}


@dataclass(frozen=True)
class Behaviour:
    """One scripted answer (see the constructors below)."""

    kind: str                                 # http | raw | reset | stall | cut | stream
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    seconds: float = 0.0                      # stall: how long before closing; stream: per chunk
    cut: int = 0                              # cut: body bytes sent of Content-Length
    chunks: tuple[bytes, ...] = ()
    then: str = "end"                         # stream: end | cut (closed mid-body) | hang (until the peer leaves)


def _body(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


def http(status: int = 200, headers: dict[str, str] | list[tuple[str, str]] | None = None,
         body: Any = None) -> Behaviour:
    """A well-formed answer (JSON by default: a chat completion for 2xx, an error otherwise)."""
    if body is None:
        body = OK_BODY if status < 300 else {"error": {"message": f"HTTP {status}", "type": "error"}}
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if not any(k.lower() == "content-type" for k, _ in items):
        items.append(("Content-Type", "application/json"))
    return Behaviour("http", status, tuple(items), _body(body))


def raw(data: bytes) -> Behaviour:
    """These bytes instead of an answer, then the connection closes."""
    return Behaviour("raw", body=data)


def reset() -> Behaviour:
    """The connection is reset (RST) without a byte of answer."""
    return Behaviour("reset")


def stall(seconds: float) -> Behaviour:
    """Nothing for *seconds*, then the connection closes."""
    return Behaviour("stall", seconds=seconds)


def cut(status: int = 200, body: Any = None, sent: int = 10, hang: bool = False) -> Behaviour:
    """A full Content-Length announced, only *sent* bytes of the body, then close (*hang*:
    nothing more until the peer closes the connection, counted in ``hung_up``)."""
    b = http(status, body=body)
    return Behaviour("cut", b.status, b.headers, b.body, cut=sent, then="hang" if hang else "end")


def chat_delta(text: str) -> bytes:
    """One Chat Completions stream event carrying *text*."""
    return b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}).encode() + b"\n\n"


def stream(chunks: list[bytes], every: float = 0.0, status: int = 200, then: str = "end") -> Behaviour:
    """An SSE answer, chunked, one chunk every *every* seconds (an empty chunk list: none);
    *then* ``end`` (the last chunk), ``cut`` (the connection closed without it) or ``hang``
    (nothing more, until the peer closes the connection: counted in ``hung_up``)."""
    return Behaviour("stream", status, (("Content-Type", "text/event-stream"),), seconds=every,
                     chunks=tuple(chunks), then=then)


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    target: str                              # the request target: path and raw query
    headers: list[tuple[str, str]]
    body: bytes
    key: str | None

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


@dataclass
class _Script:
    per_key: dict[str, list[Behaviour]] = field(default_factory=dict)
    default: Behaviour = field(default_factory=http)


class ScriptedUpstream:
    """A loopback upstream answering as scripted (see the module docstring)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.hung_up = 0                         # hanging streams whose peer closed the connection
        self._script = _Script()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="scripted-upstream", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedUpstream:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._thread.is_alive():
            return                  # closed already (a test may end the upstream early)

        async def close() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:         # stalls and slow streams end with the test
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # -- the script --

    def script(self, key: str | None, *behaviours: Behaviour) -> None:
        """Answer requests with bearer *key* by *behaviours* in turn, the last one repeating
        (``key=None``: the default for every other request)."""
        with self._lock:
            if key is None:
                self._script.default = behaviours[-1]
            else:
                self._script.per_key[key] = list(behaviours)

    def reset_script(self) -> None:
        with self._lock:
            self._script = _Script()
            self.seen.clear()

    def hits(self, key: str) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.key == key)

    def _next(self, key: str | None) -> Behaviour:
        with self._lock:
            queue = self._script.per_key.get(key or "")
            if not queue:
                return self._script.default
            return queue.pop(0) if len(queue) > 1 else queue[0]

    # -- serving --

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                seen = await self._read(reader)
                if seen is None:
                    return
                with self._lock:
                    self.seen.append(seen)
                if not await self._answer(self._next(seen.key), writer, reader):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def _read(self, reader: asyncio.StreamReader) -> Seen | None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, TimeoutError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = [(k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)]
        length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
        body = await asyncio.wait_for(reader.readexactly(length), 30) if length else b""
        auth = next((v for k, v in headers if k.lower() == "authorization"), "")
        # The key is the bearer's, or (Anthropic's form) the x-api-key's.
        key = auth[7:] if auth.lower().startswith("bearer ") else \
            next((v for k, v in headers if k.lower() == "x-api-key"), None)
        return Seen(method, target, headers, body, key)

    async def _hang(self, reader: asyncio.StreamReader) -> None:
        """Nothing more until the peer closes the connection (bounded), counted in ``hung_up``."""
        await asyncio.wait_for(reader.read(), 120)     # b"": the peer closed
        with self._lock:
            self.hung_up += 1

    async def _answer(self, b: Behaviour, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> bool:
        """Send *b*; True when the connection may serve another request."""
        if b.kind == "raw":
            writer.write(b.body)
            await writer.drain()
            return False
        if b.kind == "reset":
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if b.kind == "stall":
            await asyncio.sleep(b.seconds)
            return False
        reason = "OK" if b.status < 400 else "Error"
        head = f"HTTP/1.1 {b.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in b.headers)
        if b.kind == "stream":
            writer.write((head + "Transfer-Encoding: chunked\r\n\r\n").encode("latin-1"))
            for chunk in b.chunks:
                await writer.drain()
                if b.seconds:
                    await asyncio.sleep(b.seconds)
                writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            if b.then == "cut":
                await writer.drain()
                return False
            if b.then == "hang":
                await writer.drain()
                await self._hang(reader)
                return False
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        writer.write((head + f"Content-Length: {len(b.body)}\r\n\r\n").encode("latin-1"))
        if b.kind == "cut":
            writer.write(b.body[:b.cut])
            await writer.drain()
            if b.then == "hang":
                await self._hang(reader)
            return False
        writer.write(b.body)
        await writer.drain()
        return True
