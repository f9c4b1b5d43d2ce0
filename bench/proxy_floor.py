"""The floor of a pool proxy: hermes-admin's necessary work only, on the bare passthrough's server.

    python bench/proxy_floor.py HOME PORT_FILE [asyncio|uvloop] [ours|bare]

What a proxy of a credential pool cannot leave out, done with hermes-admin's own code on
*HOME* (the bench's home, loaded into a :class:`~store.proxy.routing.chain.Chain` as the proxy
does): **select** a row (``Chain.select``: the eligibility filters, the strategy, the request
count), **attach** its key (the headers kept, the dialect's auth header and path rule, the
upstream URL), **forward** on one pooled session configured as the proxy's (no decoding, no
cookies, its timeouts), and **judge** the answer once (the rate-limit readings read once; a
success's verdict with the usage of a body read whole; an error answer read into the agent's
:class:`~store.agent.outcomes.Result` and judged). The answer goes back as the bare
passthrough sends it (a body whole, a stream chunk by chunk).

Left out, on purpose: everything the proxy promises beyond that: the door (inbound key,
the model name's bound, the body timer), the request's trace, log line and histograms, the
in-flight counts and headroom tickets, the answer's redaction (headers and the row's token,
the stream's hold-back), the route's marks, the breaker and pin bookkeeping, the usage feed
and the budgets' tally, retries and the fallback walk, the error answers' shapes.
``bench/bench_proxy_cpu.py --floor`` measures it beside hermes-admin and the bare
passthrough in the same rounds: hermes-admin less the floor is what the promises cost,
the floor less the bare passthrough is the price of a pool and a verdict.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from store.agent.judge import judge, judge_success  # noqa: E402
from store.dialects.dialect import Credential  # noqa: E402
from store.dialects.registry import dialect_for  # noqa: E402
from store.paths import Home  # noqa: E402
from store.proxy.edge.upstream import open_session  # noqa: E402
from store.proxy.edge.wire import DROP_REQUEST, DROP_RESPONSE, UpstreamUrls, kept, raw_query, result_of  # noqa: E402
from store.proxy.routing.chain import Chain  # noqa: E402
from store.proxy.routing.protocols import ANTHROPIC, PROTOCOL_OF, Want  # noqa: E402
from store.proxy.routing.upstreams import base_for  # noqa: E402
from store.proxy.server import UPSTREAM_TIMEOUT  # noqa: E402


async def main(home: Home, port_file: Path, session_of: str = "ours") -> None:
    chain = Chain(home, "openrouter")
    chain.load()
    chain.eligibility.seed(home)
    if session_of == "bare":       # as bench/bare_proxy.py's
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256), cookie_jar=aiohttp.DummyCookieJar())
    else:                          # the proxy's (its read bound's once-a-second check left out)
        session = open_session(UPSTREAM_TIMEOUT)
    urls = UpstreamUrls()

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        protocol = PROTOCOL_OF.get(path)
        body = await request.read()
        if protocol is None:
            return web.Response(status=404)
        want = Want(protocol, body)
        attempt = chain.select(want=want)                                   # select
        if attempt is None:
            return web.Response(status=503)
        sel = attempt.selection
        base = base_for(sel.pool, sel.base_url)
        dialect = dialect_for(sel.pool, base, chain.speaks(attempt.index, ANTHROPIC))
        headers = dialect.attach(kept(request.headers, DROP_REQUEST),     # attach
                                 Credential(sel.token, sel.pool, base, path, protocol))
        url = urls.get(base, dialect.tail(protocol, base, path, raw_query(request)))
        async with session.request(request.method, url, data=body or None, headers=headers,   # forward
                                   allow_redirects=False) as up:
            now = time.time()
            readings = chain.headroom.read(up.headers, now)                 # judge: readings once
            out_headers = kept(up.headers, DROP_RESPONSE)
            if up.status >= 400:
                raw = await up.read()
                judge(result_of(up.status, up.headers, raw), now, pool=sel.pool, readings=readings,
                      model=want.model if sel.model is None else sel.model)
                return web.Response(status=up.status, body=raw, headers=out_headers)
            if "text/event-stream" not in up.headers.get("Content-Type", ""):
                data = await up.read()
                judge_success(now, readings, body=data, dialect=dialect, model=sel.model)   # with usage
                return web.Response(status=up.status, body=data, headers=out_headers)
            judge_success(now, readings, model=sel.model)
            out = web.StreamResponse(status=up.status, headers=out_headers)
            await out.prepare(request)
            async for chunk in up.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    server = web.Server(handle, access_log=None, auto_decompress=False)
    runner = web.ServerRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    port_file.write_text(str(port))
    await asyncio.Event().wait()


if __name__ == "__main__":
    coro = main(Home(Path(sys.argv[1])), Path(sys.argv[2]), sys.argv[4] if len(sys.argv) > 4 else "ours")
    if (sys.argv[3] if len(sys.argv) > 3 else "asyncio") == "uvloop":
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)
