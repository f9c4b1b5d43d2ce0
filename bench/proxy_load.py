"""The load generator of bench/bench_proxy.py, in a process of its own per measurement.

    .venv/bin/python bench/proxy_load.py URL KEY CONCURRENCY [--seconds S | --count N]
                                         [--stream] [--client raw|aiohttp]

Prints one JSON object: ``latencies`` (seconds: per request, or to the first body byte
with ``--stream``), ``errors`` and ``wall`` (seconds of the measured part). By default a
small asyncio-streams HTTP/1.1 client (``raw``) that costs far less CPU per request than
aiohttp's ClientSession (``aiohttp``, the earlier generator): on a 2-core machine the
generator, the upstream and the proxy share the cores, so a costly generator inflates
every target's figures, the proxy's most.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.raw_http import BODY, Conn, chat_request, exchange  # noqa: E402 - after the tree is on the path


async def load_raw(url: str, key: str, concurrency: int, seconds: float, count: int, stream: bool) -> dict:
    """The same measurement as :func:`load_aiohttp` with a client that costs less per request
    (``bench/raw_http.py``): one kept-alive connection per worker, the request's bytes built
    once, the answer read with asyncio streams."""
    host, port, request = chat_request(url, key, stream)
    lat: list[float] = []
    errors = 0
    deadline = 0.0
    remaining = [count]

    def more() -> bool:
        if count:
            remaining[0] -= 1
            return remaining[0] >= 0
        return time.perf_counter() < deadline

    async def worker(conn: Conn | None) -> None:
        nonlocal errors
        go = more()
        while go:                       # a connection; a new one after an error
            writer = None
            try:
                conn = conn or await asyncio.open_connection(host, port)
                writer = conn[1]
                while go:
                    status, first, end = await exchange(conn, request)
                    lat.append(first if stream else end)          # with --stream: the first body byte
                    errors += status != 200
                    go = more()
            except (OSError, asyncio.IncompleteReadError, ValueError):
                errors += 1
                go = more()
            finally:
                conn = None
                if writer is not None:
                    writer.close()

    async def connect() -> Conn:
        conn = await asyncio.open_connection(host, port)
        await exchange(conn, request)
        return conn

    # Connect and send one unmeasured request on each connection, then start the clock: what
    # is measured is requests on open connections, not connects (a proxy under test opens its
    # own upstream connections on these first requests).
    conns = await asyncio.gather(*(connect() for _ in range(concurrency)))
    t0 = time.perf_counter()
    deadline = t0 + seconds
    await asyncio.gather(*(worker(c) for c in conns))
    return {"latencies": lat, "errors": errors, "wall": time.perf_counter() - t0}


async def load_aiohttp(url: str, key: str, concurrency: int, seconds: float, count: int, stream: bool) -> dict:
    import aiohttp

    body = dict(BODY, stream=True) if stream else BODY
    lat: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds
    remaining = [count]
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, headers={"Authorization": f"Bearer {key}"}) as s:
        async def worker() -> None:
            nonlocal errors
            while True:
                if count:
                    if remaining[0] <= 0:
                        return
                    remaining[0] -= 1
                elif time.perf_counter() >= deadline:
                    return
                t0 = time.perf_counter()
                try:
                    async with s.post(url + "/chat/completions", json=body) as r:
                        if stream:
                            await r.content.readany()          # first byte of the body
                            lat.append(time.perf_counter() - t0)
                            await r.read()
                        else:
                            await r.read()
                            lat.append(time.perf_counter() - t0)
                        if r.status != 200:
                            errors += 1
                except aiohttp.ClientError:
                    errors += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return {"latencies": lat, "errors": errors, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("key")
    ap.add_argument("concurrency", type=int)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--client", choices=("raw", "aiohttp"), default="raw")
    args = ap.parse_args(argv)
    load = load_raw if args.client == "raw" else load_aiohttp
    json.dump(asyncio.run(load(args.url, args.key, args.concurrency, args.seconds, args.count, args.stream)),
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
