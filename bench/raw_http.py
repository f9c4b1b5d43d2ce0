"""The raw HTTP/1.1 client the proxy benchmarks' load generators share (``bench/proxy_load.py``,
``bench/usage_alternate.py``): a chat request's bytes built once, and its answer read with
asyncio streams (Content-Length or chunked) on a kept-alive connection.

It costs far less CPU per request than aiohttp's ClientSession, which spends about as much as
the proxy under test: on a 2-core machine the generator, the upstream and the proxy share the
cores, so a costly generator inflates every target's figures, the proxy's most.
"""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import urlsplit

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def chat_request(url: str, key: str, stream: bool = False) -> tuple[str, int, bytes]:
    """The host, the port and the bytes of one ``POST <url>/chat/completions`` with *key* as
    its bearer (``"stream": true`` in its body with *stream*)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    body = json.dumps(dict(BODY, stream=True) if stream else BODY).encode()
    head = (f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return host, port, head.encode() + body


async def exchange(conn: Conn, request: bytes) -> tuple[int, float, float]:
    """Send *request* on *conn* and read its whole answer. Returns the status, the seconds to
    the answer's first body chunk (read whole; for a Content-Length body, the whole body) and
    the seconds to its end, both from the moment the request was written."""
    reader, writer = conn
    t0 = time.perf_counter()
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lower = head.lower()
    first = 0.0
    if b"transfer-encoding: chunked" in lower:
        while True:
            size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if not first:
                first = time.perf_counter() - t0
            if size == 0:
                break
    else:
        at = lower.index(b"content-length:") + 15
        await reader.readexactly(int(lower[at:lower.index(b"\r\n", at)]))
    end = time.perf_counter() - t0
    return int(head[9:12]), first or end, end
