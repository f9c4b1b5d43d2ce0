"""The floor for any aiohttp proxy: forward a request to one upstream and copy the answer back.

    python bench/bare_proxy.py UPSTREAM_BASE PORT_FILE [asyncio|uvloop]

No pool, no selection, no outcome handling, no status, no auth: one pooled ClientSession
(keep-alive), aiohttp's low-level server (no router, no access log), the body read and sent
on, the answer streamed back chunk by chunk. bench/bench_proxy.py measures it beside
hermes-admin's proxy in the same run, so the latency hermes-admin adds *beyond* what aiohttp
itself costs on this machine is visible. The third argument picks the event loop (asyncio's
by default), so each hermes-admin is compared with the floor on its own loop.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
from aiohttp import web

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


async def main(upstream: str, port_file: Path) -> None:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256), cookie_jar=aiohttp.DummyCookieJar())

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        body = await request.read()
        path = request.path[len("/v1"):] if request.path.startswith("/v1") else request.path
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        async with session.request(request.method, upstream + path, data=body, headers=headers) as up:
            out = web.StreamResponse(status=up.status, headers={
                k: v for k, v in up.headers.items() if k.lower() not in HOP})
            await out.prepare(request)
            async for chunk in up.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    server = web.Server(handle, access_log=None)
    runner = web.ServerRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    port_file.write_text(str(port))
    await asyncio.Event().wait()


if __name__ == "__main__":
    coro = main(sys.argv[1].rstrip("/"), Path(sys.argv[2]))
    if (sys.argv[3] if len(sys.argv) > 3 else "asyncio") == "uvloop":
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)
