"""The proxy's HTTP side: an aiohttp server and ONE pooled upstream ClientSession.

Per request: check the path (four allowed), the inbound key, the body cap; pick a row
from the chain's in-memory view; send upstream with the row's key over a kept-alive
connection; on a failure, let the agent's outcome rules (run in a worker thread: they
may write the store or refresh a token) say retry, rotate or fall back. A 2xx is relayed
as it arrives: SSE chunk by chunk, never buffered. When nothing in the chain can serve,
503 with ``Retry-After``.

Background tasks: the store watcher (a thread, :func:`store.watch.home.watch_home`), the
write-behind flush of request counts and the status file (every second), the restore
gate (off the loop, at most one at a time). SIGTERM: stop accepting, drain in-flight
requests up to a bound, flush, write a final status.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import aiohttp
from aiohttp import web

from store.agent import probe
from store.agent.outcomes import FAILED, OUT, RETRY, ROTATED, Result
from store.errors import StoreUnreadable
from store.paths import AUTH_FILE, CONFIG_FILE, ENV_FILE, Home
from store.proxy import ALLOWED_PATHS, DRAIN_TIMEOUT
from store.proxy.chain import Attempt, Chain
from store.proxy.inbound import Gate
from store.proxy.stats import Stats, write_status
from store.proxy.wire import (
    DEFAULT_BASES,
    DROP_REQUEST,
    DROP_RESPONSE,
    H_CRED,
    H_FALLBACK,
    H_POOL,
    H_ROUTE,
    UpstreamUrls,
    error_body,
    result_of,
    with_model,
)
from store.watch.home import watch_home

log = logging.getLogger("hermes_admin.proxy")

BODY_CAP = 10 * 1024 * 1024
FLUSH_INTERVAL = 1.0
# Upstream: connect fast or fail over; a stream may stay quiet a long while (reasoning models).
UPSTREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=600)
class ProxyServer:
    """One proxy on one home: the aiohttp app, the upstream session and the chain."""

    def __init__(self, home: Home, chain: Chain, gate: Gate, *, host: str = "127.0.0.1", port: int = 8645,
                 clock: Callable[[], float] = time.time, drain_timeout: float = DRAIN_TIMEOUT,
                 body_cap: int = BODY_CAP, watch: bool = True) -> None:
        self.home = home
        self.chain = chain
        self.gate = gate
        self.host = host
        self.port = port
        self.clock = clock
        self.drain_timeout = drain_timeout
        self.body_cap = body_cap
        self.watch = watch
        self.stats = Stats(clock)
        self.state = "starting"
        self.started_at = clock()
        self.in_flight = 0
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._tasks: list[asyncio.Task] = []
        self._restore_task: asyncio.Task | None = None
        self._status_write: asyncio.Future | None = None
        self._stop_watch = threading.Event()
        self._watcher: threading.Thread | None = None
        self._max_tries = 4
        self._urls = UpstreamUrls()

    # -- lifecycle --

    def app(self) -> web.Server:
        """aiohttp's low-level server: :meth:`handle` routes the four paths itself (an
        Application's router and signals cost per request); no access log line per request."""
        return web.Server(self.handle, request_factory=self._request, access_log=None)

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                               client_max_size=self.body_cap)

    async def start(self) -> None:
        """Load the view, open the upstream session, listen, start the background work."""
        await asyncio.to_thread(self.chain.load)
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60, ttl_dns_cache=300)
        # No cookie jar: one session serves every client, and one client's upstream cookies
        # must not ride along on another's requests (and filtering them costs per request).
        self._session = aiohttp.ClientSession(connector=connector, timeout=UPSTREAM_TIMEOUT,
                                              auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
                                              skip_auto_headers=("Accept-Encoding", "User-Agent"))
        self._runner = web.ServerRunner(self.app(), handle_signals=False)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True, backlog=1024)
        await self._site.start()
        addrs = self._runner.addresses
        if addrs and self.port == 0:
            self.port = addrs[0][1]
        self.state = "running"
        loop = asyncio.get_running_loop()
        if self.watch:
            self._watcher = threading.Thread(target=self._watch, args=(loop,), name="proxy-watch",
                                             daemon=True)
            self._watcher.start()
        self._tasks.append(asyncio.create_task(self._every_second()))
        self._write_status()

    async def stop(self) -> None:
        """Stop accepting, drain in-flight requests (bounded), flush counts, final status."""
        self.state = "draining"
        if self._site is not None:
            await self._site.stop()           # the listening socket closes; requests continue
        deadline = time.monotonic() + self.drain_timeout
        while self.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._status_write is not None:
            with contextlib.suppress(Exception):
                await self._status_write
        self._stop_watch.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        try:
            await asyncio.to_thread(self.chain.flush)
        except Exception as exc:   # reported, never swallowed silently
            log.error("could not write request counts on shutdown: %s", exc)
        self.state = "stopped"
        self._write_status()
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.join, 2.0)

    # -- background --

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        for changed in watch_home(self.home, self._stop_watch):
            if self._stop_watch.is_set():
                return
            if AUTH_FILE in changed:
                try:
                    self.chain.load()    # ordered with the chain's other loads: never goes back
                except StoreUnreadable as exc:
                    log.warning("%s; keeping the last good view", exc)
            if CONFIG_FILE in changed:
                loop.call_soon_threadsafe(self.chain.refresh_config)
            if ENV_FILE in changed:
                env = probe.home_env(self.home)
                loop.call_soon_threadsafe(self.chain.set_env, env)

    async def _every_second(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            if self.chain.pending():
                try:
                    await asyncio.to_thread(self.chain.flush)
                except Exception as exc:
                    log.warning("request counts not written yet (%s); will retry", exc)
            self._log_notices()
            # Built on the loop, which owns the counters; serialised and written off it.
            # Shielded: a stop() that cancels this task waits for the write to land, so it
            # never lands after the final "stopped" status.
            self._status_write = asyncio.ensure_future(
                asyncio.to_thread(write_status, self.home, self.status()))
            try:
                await asyncio.shield(self._status_write)
            except OSError as exc:
                log.warning("could not write the status file: %s", exc)

    def _log_notices(self) -> None:
        notices = self.chain.runtime.notices
        while notices:
            n = notices.pop(0)
            log.info("%s: %s", n.kind, n.text)

    def _kick_restore(self) -> None:
        if self._restore_task is None or self._restore_task.done():
            self._restore_task = asyncio.create_task(asyncio.to_thread(self.chain.maybe_restore))

    def status(self) -> dict[str, Any]:
        """What the console shows: chain state, per-credential and per-pool traffic (no secrets)."""
        rt = self.chain.runtime
        nxt = None
        if not rt.on_primary:
            last = rt.last_restore_check
            nxt = self.clock() if last is None else last + rt.restore_interval
        return {"pid": os.getpid(), "host": self.host, "port": self.port,
                "url": f"http://{self.host}:{self.port}/v1", "state": self.state,
                "started_at": self.started_at, "updated_at": self.clock(),
                "primary": self.chain.runtime.primary, "active": rt.route.name,
                "on_fallback_since": self.chain.fallback_since, "next_restore_check": nxt,
                "chain": self.chain.describe(), "in_flight": self.in_flight,
                "pending_counts": self.chain.pending(), "inbound_auth": not self.gate.open,
                **self.stats.snapshot()}

    def _write_status(self) -> None:
        try:
            write_status(self.home, self.status())
        except OSError as exc:
            log.warning("could not write the status file: %s", exc)

    # -- requests --

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path not in ALLOWED_PATHS:
            return error_body(404, f"{path} is not served here; allowed: {', '.join(ALLOWED_PATHS)}",
                              "not_found", allowed_paths=list(ALLOWED_PATHS))
        if not self.gate.allows(request.headers.get("Authorization")):
            return error_body(401, "a valid client key is required (Authorization: Bearer <client key>)",
                              "invalid_client_key")
        want = "GET" if path == "/v1/models" else "POST"
        if request.method != want:
            return error_body(405, f"{path} takes {want}", "method_not_allowed",
                              allowed_paths=list(ALLOWED_PATHS))
        if self.state != "running":
            return error_body(503, "the proxy is shutting down", "shutting_down")
        if (request.content_length or 0) > self.body_cap:
            return self._too_large()
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large()
        self.in_flight += 1
        try:
            return await self._forward(request, path, body)
        finally:
            self.in_flight -= 1

    def _too_large(self) -> web.Response:
        return error_body(413, f"request body over {self.body_cap // (1024 * 1024)} MB", "request_too_large")

    async def _forward(self, request: web.BaseRequest, path: str, body: bytes) -> web.StreamResponse:
        chain = self.chain
        if chain.restore_due():
            self._kick_restore()
        attempt = chain.select()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in DROP_REQUEST}
        tail = path[3:] + (f"?{request.query_string}" if request.query_string else "")
        tries, limit = 0, self._max_tries + 2 * chain.row_count()
        while attempt is not None and tries < limit:
            tries += 1
            sel = attempt.selection
            if not attempt.fresh and not chain.usable(sel):   # benched since chosen: never send to it
                attempt = chain.select()
                continue
            payload = body if attempt.index == 0 or not sel.model else with_model(body, sel.model)
            base = (sel.base_url or DEFAULT_BASES.get(sel.pool, "")).rstrip("/")
            if not base:       # a configuration gap, not the key's fault: bench nothing
                self.stats.errors += 1
                return error_body(502, f"{sel.pool}: row {sel.row_id} has no base_url and the pool "
                                       f"no default; set base_url on the row", "no_upstream")
            headers["Authorization"] = "Bearer " + sel.token
            self.stats.begin(sel.pool, sel.row_id, sel.label)
            raw: bytes | None = None       # the upstream's error body (None: never answered)
            try:
                up = await self._session.request(request.method, self._urls.get(base, tail), data=payload or None,
                                                 headers=headers)
            except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
                self.stats.end(sel.pool, sel.row_id)
                result = Result(502, message=f"upstream unreachable: {type(exc).__name__}")
            else:
                if up.status < 400:
                    chain.success(attempt)
                    return await self._relay(request, up, attempt)
                raw = await up.read()
                up.release()
                self.stats.end(sel.pool, sel.row_id)
                if up.status == 429:
                    self.stats.rate_limited(sel.pool)
                result = result_of(up.status, up.headers, raw)
            decision = await asyncio.to_thread(chain.outcome, attempt, result)
            if decision.action in (RETRY, ROTATED) and decision.selection is not None:
                nxt = decision.selection
                model = (attempt.route or chain.routes[attempt.index]).model if attempt.index else None
                attempt = replace(attempt, selection=replace(nxt, model=model), fresh=False)
            elif decision.action == OUT:
                attempt = chain.select(attempt.index + 1) if attempt.index + 1 < len(chain.routes) else None
            elif decision.action == FAILED:
                # Not a credential problem (e.g. 400): the client gets the upstream's answer.
                if raw is not None:
                    return self._passthrough(result, raw, attempt)
                self.stats.errors += 1
                return error_body(502, result.message or "upstream failed", "upstream_error")
            else:
                attempt = chain.select()
        self.stats.errors += 1
        return self._all_out()

    def _passthrough(self, result: Result, raw: bytes, attempt: Attempt) -> web.Response:
        resp = web.Response(status=result.status, body=raw, content_type="application/json")
        self._mark(resp.headers, attempt)
        return resp

    def _mark(self, headers: Any, attempt: Attempt) -> None:
        headers[H_POOL] = attempt.selection.pool
        headers[H_CRED] = attempt.selection.row_id
        headers[H_FALLBACK] = "1" if attempt.index else "0"
        headers[H_ROUTE] = (attempt.route or self.chain.routes[attempt.index]).name

    def _all_out(self) -> web.Response:
        reopen = self.chain.reopen_times()
        retry = self.chain.retry_after(reopen)
        now = self.clock()
        pools = [{"pool": p, "reopens_at": t, "reopens_in": None if t is None else max(0, round(t - now))}
                 for p, t in reopen.items()]
        parts = [f"{p['pool']} reopens in {p['reopens_in']} s" if p["reopens_at"] is not None
                 else f"{p['pool']} has nothing that reopens by itself" for p in pools]
        resp = error_body(503, "every credential in the chain is cooling: " + "; ".join(parts or ["no pool"]),
                          "all_credentials_cooling", pools=pools)
        if retry is not None:
            resp.headers["Retry-After"] = str(retry)
        return resp

    async def _relay(self, request: web.BaseRequest, up: aiohttp.ClientResponse,
                     attempt: Attempt) -> web.StreamResponse:
        sel = attempt.selection
        try:
            headers = {k: v for k, v in up.headers.items() if k.lower() not in DROP_RESPONSE}
            if "text/event-stream" not in up.headers.get("Content-Type", ""):
                data = await up.read()
                resp = web.Response(status=up.status, body=data, headers=headers)
                self._mark(resp.headers, attempt)
                return resp
            resp = web.StreamResponse(status=up.status, headers=headers)
            self._mark(resp.headers, attempt)
            await resp.prepare(request)
            sent = 0
            while True:
                try:
                    chunk = await up.content.readany()
                except (TimeoutError, aiohttp.ClientError) as exc:
                    # Bytes already reached the client: no retry, but the row's outcome counts.
                    self.stats.stream_failures += 1
                    log.warning("%s/%s: stream broke after %d bytes (%s)", sel.pool, sel.row_id,
                                sent, type(exc).__name__)
                    res = Result(502, message=f"stream broke after {sent} bytes")
                    asyncio.get_running_loop().run_in_executor(None, self.chain.outcome, attempt, res)
                    # Tell the client in-band (SDKs raise on an SSE error event) rather than
                    # ending the stream as if the answer were complete.
                    err = {"error": {"message": f"upstream stream broke after {sent} bytes", "type":
                                     "upstream_stream_broken", "code": 502}}
                    await resp.write(b"data: " + json.dumps(err).encode() + b"\n\n")
                    break
                if not chunk:
                    break
                await resp.write(chunk)        # a gone client raises here; finally releases
                sent += len(chunk)
            with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
                await resp.write_eof()
            return resp
        finally:
            up.release()
            self.stats.end(sel.pool, sel.row_id)


async def serve(server: ProxyServer, *, on_ready: Callable[[ProxyServer], None] | None = None) -> None:
    """Run *server* until SIGTERM or SIGINT, then drain and stop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    # What start-up made lives as long as the process: keep it out of the cyclic GC's full
    # collections, which otherwise walk it all and stalled every in-flight request for
    # ~17 ms every few seconds under load.
    gc.freeze()
    if on_ready is not None:
        on_ready(server)
    await stop.wait()
    log.info("stopping: draining %d in-flight request(s), at most %g s", server.in_flight,
             server.drain_timeout)
    await server.stop()
