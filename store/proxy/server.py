"""The proxy's HTTP side: an aiohttp server and ONE pooled upstream ClientSession.

Per request: check the path (the served paths and ``/metrics``) and the method; the inbound
key, the body cap and how long the body takes to arrive are :class:`store.proxy.edge.door.Door`'s;
then :class:`store.proxy.forward.Forwarder` walks the chain. Every failure is an answer
(RELIABILITY 43): whatever goes wrong inside, the client gets JSON with a request id that the
log line carries too (Anthropic-shaped on ``/v1/messages``, OpenAI-shaped elsewhere), never
aiohttp's bare text 500 or an empty reply.

Background tasks: the store watcher (a thread, :func:`store.watch.home.watch_home`), the
write-behind flush of request counts and the status file (every second, draining too),
the restore gate (off the loop, at most one at a time). Blocking work runs in daemon
threads (:mod:`store.proxy.offloop`), so nothing holds the process at exit.

SIGTERM (RELIABILITY 42): stop accepting, drain in-flight requests (a body still arriving
included) up to ``drain_timeout``, cancel what is left (an open stream gets an in-band
error event), flush the counts with a short lock wait, write the final status, exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import secrets as _secrets
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from store.agent import probe
from store.agent.headroom import SIDECAR
from store.errors import StoreUnreadable
from store.paths import AUTH_FILE, CONFIG_FILE, ENV_FILE, Home
from store.proxy import ALLOWED_PATHS, BODY_TIMEOUT, DRAIN_TIMEOUT, control
from store.proxy.edge.anthropic import shaped
from store.proxy.edge.door import Door, ProxyHttpServer
from store.proxy.edge.inbound import Gate
from store.proxy.edge.redacting import ProxySecrets, SecretsSource
from store.proxy.edge.wire import error_body
from store.proxy.forward import Forwarder
from store.proxy.loop import loop_name, settle_gc
from store.proxy.observing.metrics import METRICS_PATH, metrics_response
from store.proxy.observing.report import affinity, describe
from store.proxy.observing.requests import CURRENT, RequestLog, answered_as
from store.proxy.observing.stats import Stats, write_status
from store.proxy.observing.status_file import StatusFile
from store.proxy.offloop import run_blocking
from store.proxy.routing.chain import Chain
from store.proxy.routing.protocols import ANTHROPIC, PROTOCOL_OF
from store.proxy.routing.upstreams import route_name
from store.watch.home import watch_home

log = logging.getLogger("hermes_admin.proxy")

BODY_CAP = 10 * 1024 * 1024
IDLE_TIMEOUT = 75.0       # an idle or silent client connection is closed after this
LINGER = 2.0              # after refusing a body (413, 408), read on this long before closing
FLUSH_INTERVAL = 1.0
FINAL_LOCK_WAIT = 5.0     # the last flush of counts on shutdown waits this long for the lock
# A client that closes its connection has its handler cancelled at once (aiohttp's default is
# to let it run on): its in-flight counts, its upstream connection and any hold on its key
# end then, not when a silent upstream's read timeout passes (store.proxy.edge.relay).
HANDLER_CANCELLATION = True
# Upstream: connect fast or fail over; a stream may stay quiet a long while (reasoning models).
UPSTREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=600)


class ProxyServer:
    """One proxy on one home: the aiohttp server, the upstream session and the chain."""

    def __init__(self, home: Home, chain: Chain, gate: Gate, *, host: str = "127.0.0.1", port: int = 8645,
                 clock: Callable[[], float] = time.time, drain_timeout: float = DRAIN_TIMEOUT,
                 body_cap: int = BODY_CAP, body_timeout: float = BODY_TIMEOUT, watch: bool = True,
                 metrics: bool = True) -> None:
        self.home = home
        self.chain = chain
        self.gate = gate
        self.host = host
        self.port = port
        self.clock = clock
        self.drain_timeout = drain_timeout
        self.body_cap = body_cap
        self.body_timeout = body_timeout
        self.watch = watch
        self.stats = Stats(clock)
        self.requests = RequestLog(clock)     # the last requests, their counters and latencies
        self.metrics = metrics                # serve /metrics (behind the inbound-auth rule)
        self.answers = control.Answers()      # to proxy restore / pin / unpin (control files)
        self.secrets = ProxySecrets(SecretsSource(lambda: chain.last_doc, lambda: chain.runtime.config.get(),
                                                  lambda: chain.env), gate.keys)
        self.forwarder = Forwarder(chain, self.stats, self.secrets)
        self.state = "starting"
        self.started_at = clock()
        self.in_flight = 0
        self._handlers: set[asyncio.Task] = set()
        self._ids = itertools.count(1)
        self._id_prefix = _secrets.token_hex(3)
        self.door = Door(gate, body_cap, body_timeout, self._rid)
        self._session: aiohttp.ClientSession | None = None
        # The loop once started: each asyncio.get_running_loop() (and current_task() without a
        # loop) is a getpid() system call on Python 3.11.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.ServerRunner | None = None
        self._site: web.TCPSite | None = None
        self._tasks: list[asyncio.Task] = []
        self._restore_task: asyncio.Task | None = None
        self._status_write: asyncio.Future | None = None
        self._status_problem: str | None = None
        self._stop_watch = threading.Event()
        self._watcher: threading.Thread | None = None

    # -- lifecycle --

    def app(self) -> ProxyHttpServer:
        """aiohttp's low-level server: :meth:`handle` routes the four paths itself (an
        Application's router and signals cost per request); no access log line per request.
        Request bodies are not decoded (``auto_decompress``): they go on as they came; a
        client that leaves has its handler cancelled (:data:`HANDLER_CANCELLATION`); a
        request it cannot parse gets a redacted answer (:class:`ProxyHttpServer`)."""
        return ProxyHttpServer(self.handle, redact=self.secrets.text, request_factory=self._request,
                               access_log=None, auto_decompress=False, keepalive_timeout=IDLE_TIMEOUT,
                               lingering_time=LINGER, handler_cancellation=HANDLER_CANCELLATION)

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, self._loop or asyncio.get_running_loop(),
                               client_max_size=self.body_cap)

    async def start(self) -> None:
        """Load the view, open the upstream session, listen, start the background work."""
        self.secrets.redact_logs(True)
        self._loop = self.forwarder.loop = self.requests.loop = asyncio.get_running_loop()
        await asyncio.to_thread(self.chain.load)
        await asyncio.to_thread(self.chain.eligibility.seed, self.home)    # the budgets' tally (#29)
        self._session = self.forwarder.open(UPSTREAM_TIMEOUT)
        self._runner = web.ServerRunner(self.app(), handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True, backlog=1024)
        try:
            await self._site.start()
        except BaseException:
            await self._runner.cleanup()
            await self._session.close()
            self.secrets.redact_logs(False)
            raise
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
        """Stop accepting, drain (bounded), cancel the rest, flush counts, final status."""
        self.state = "draining"
        if self._site is not None:
            await self._site.stop()           # the listening socket closes; requests continue
        deadline = time.monotonic() + self.drain_timeout
        while self.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)         # the status file is still written meanwhile
        await self._cancel_left()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._status_write is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._status_write), 2.0)
        self._stop_watch.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        try:
            wait = min(self.chain.lock_timeout, FINAL_LOCK_WAIT)
            await run_blocking(self.chain.counts.flush, self.home, wait)
        except Exception as exc:   # reported, never swallowed silently
            log.error("%d request count(s) not written on shutdown: %s", self.chain.pending(), exc)
        await run_blocking(self.chain.headroom.flush, True)
        await run_blocking(self.forwarder.spend.close)     # the usage queued, to the ledger
        self.state = "stopped"
        self._write_status()
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.join, 2.0)
        self.secrets.redact_logs(False)

    async def _cancel_left(self) -> None:
        """Past the drain bound: cancel every request still running, and let them say so."""
        left = [t for t in self._handlers if not t.done()]
        if left:
            log.warning("drain bound of %g s reached: cancelling %d request(s)", self.drain_timeout, len(left))
            for task in left:
                task.cancel()
            await asyncio.wait(left, timeout=2.0)

    # -- background --

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        for changed in watch_home(self.home, self._stop_watch):
            if self._stop_watch.is_set():
                return
            try:
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
                if SIDECAR in changed:
                    self.chain.headroom.follow()     # what the other processes on the home read
                loop.call_soon_threadsafe(self.forwarder.hold.poke)   # held requests look again
            except Exception as exc:     # the watcher lives on; the view stays the last good one
                log.warning("could not follow a change of %s (%s)", ", ".join(sorted(changed)), exc)

    async def _every_second(self) -> None:
        status_file = StatusFile(self.home)      # written when it says something new (and a heartbeat)
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            self.forwarder.cut_overdue()
            if self.chain.pending():
                try:
                    await run_blocking(self.chain.flush)
                except Exception as exc:
                    log.warning("request counts not written yet (%s); will retry", exc)
            try:                      # proxy restore / pin / unpin, asked by file
                self.answers.extend(await control.take(self.home, self.port, self.chain, self.clock))
            except Exception as exc:  # the proxy serves on; the asker times out and says so
                log.warning("could not take control requests (%s)", exc)
            if self.chain.headroom.pending:
                await run_blocking(self.chain.headroom.flush)     # never raises; at most once a second
            self._log_notices()
            # Built on the loop, which owns the counters; serialised and written off it.
            # Shielded: a stop() that cancels this task waits for the write to land, so it
            # never lands after the final "stopped" status.
            self._status_write = asyncio.ensure_future(status_file.write(self.status()))
            try:
                await asyncio.shield(self._status_write)
                self._status_problem = None
            except Exception as exc:
                self._status_failed(exc)

    def _status_failed(self, exc: Exception) -> None:
        text = str(exc)
        if text != self._status_problem:      # once per problem, not every second
            log.warning("could not write the status file: %s", text)
            self._status_problem = text

    def _log_notices(self) -> None:
        notices = self.chain.runtime.notices
        while notices:
            n = notices.pop(0)
            self.requests.noticed(n.kind, n.text)
            log.info("%s: %s", n.kind, n.text)
        for text in self.chain.headroom.take_notices():
            log.warning("%s", text)

    def _kick_restore(self) -> None:
        if self._restore_task is None or self._restore_task.done():
            self._restore_task = asyncio.create_task(self._restore())

    async def _restore(self) -> None:
        try:
            await run_blocking(self.chain.maybe_restore)
        except Exception as exc:
            log.warning("the restore check failed (%s); staying on the fallback", exc)

    def status(self) -> dict[str, Any]:
        """What the console shows: chain state, upstreams failing now, traffic (no secrets)."""
        rt = self.chain.runtime
        nxt = None
        if not rt.on_primary and self.chain.steer.pin is None:
            last = rt.last_restore_check
            nxt = self.clock() if last is None else last + rt.restore_interval
        return {"pid": os.getpid(), "host": self.host, "port": self.port, "state": self.state,
                "url": f"http://{self.host}:{self.port}/v1", "started_at": self.started_at, "updated_at": self.clock(),
                "primary": rt.primary, "active": route_name(rt.route.name),
                "on_fallback_since": self.chain.fallback_since, "next_restore_check": nxt,
                "chain": describe(self.chain), "upstreams": self.chain.breakers.snapshot(self.clock()),
                "in_flight": self.in_flight, "holding": self.forwarder.hold.waiting,
                "pending_counts": self.chain.pending(),
                "inbound_auth": not self.gate.open, "loop": loop_name(), **self.stats.snapshot(),
                **self.requests.snapshot(), "pinned": self.chain.steer.pin, "control": self.answers.snapshot(),
                "usage_totals": self.forwarder.spend.snapshot(), "affinity": affinity(self.chain)}

    def _write_status(self) -> None:
        try:
            write_status(self.home, self.status())
        except Exception as exc:
            self._status_failed(exc)

    # -- requests --

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """Every request, whatever happens inside, gets an answer."""
        n = next(self._ids)
        task = asyncio.current_task(self._loop)
        if task is not None:
            self._handlers.add(task)
        resp: web.StreamResponse | None = None
        try:
            resp = await self._handle(request, n)
        except Exception as exc:
            rid = self._rid(n)
            log.error("request %s: internal error (%s)", rid, type(exc).__name__, exc_info=True)
            self.stats.errors += 1
            answered_as("proxy_error")
            resp = error_body(500, f"internal error in the hermes-admin proxy ({type(exc).__name__}); "
                                   f"request id {rid} in the proxy's log", "proxy_error", rid)
            return resp
        finally:
            self._handlers.discard(task)
            trace = CURRENT.get()
            if trace is not None:     # a request on a served path: its line in the log, its counts
                if resp is None and trace.kind is None:
                    trace.kind = "cancelled"
                self.requests.finish(trace, resp.status if resp is not None else 499)
        # The Anthropic paths get the proxy's own errors in Anthropic's shape.
        return shaped(resp) if request.path.startswith("/v1/messages") else resp

    def _rid(self, n: int) -> str:
        return f"{self._id_prefix}-{n}"

    async def _handle(self, request: web.BaseRequest, n: int) -> web.StreamResponse:
        path = request.path
        if path == METRICS_PATH and self.metrics:
            return self._metrics(request, n)
        protocol = PROTOCOL_OF.get(path)
        if protocol is None:
            return self.door.refuse(n, 404, f"this path is not served here; allowed: {', '.join(ALLOWED_PATHS)}",
                                    "not_found", allowed_paths=list(ALLOWED_PATHS))
        self.requests.begin(rid := self._rid(n), path)
        if not self.door.allowed(request, protocol):
            return self.door.refuse(n, 401, "a valid client key is required (Authorization: Bearer <client key>"
                                    + (", or x-api-key: <client key>)" if protocol == ANTHROPIC else ")"),
                                    "invalid_client_key")
        want = "GET" if path == "/v1/models" else "POST"
        if request.method != want:
            return self.door.refuse(n, 405, f"{path} takes {want}", "method_not_allowed",
                                    allowed_paths=list(ALLOWED_PATHS))
        if self.state != "running":
            return self.door.refuse(n, 503, "the proxy is shutting down", "shutting_down")
        if (request.content_length or 0) > self.body_cap:
            return self.door.too_large(n)
        self.in_flight += 1
        try:
            got = await self.door.body(request, n)
            if type(got) is not tuple:      # the answer that refused it (no ABC check on a response)
                return got
            if self.chain.restore_due():
                self._kick_restore()
            return await self.forwarder.forward(request, path, got[0], rid, protocol, got[1])
        finally:
            self.in_flight -= 1

    def _metrics(self, request: web.BaseRequest, n: int) -> web.Response:
        """``/metrics``: the Prometheus text of the status as it is now, built at scrape time;
        behind the same inbound-auth rule as every other path (on an exposed bind, a client key)."""
        if not self.gate.allows(request.headers.get("Authorization")):
            return self.door.refuse(n, 401, "a valid client key is required (Authorization: Bearer <client key>)",
                                    "invalid_client_key")
        if request.method != "GET":
            return self.door.refuse(n, 405, f"{METRICS_PATH} takes GET", "method_not_allowed")
        return metrics_response(self.status(), self.clock())

async def serve(server: ProxyServer, *, on_ready: Callable[[ProxyServer], None] | None = None) -> None:
    """Run *server* until SIGTERM or SIGINT, then drain (bounded) and stop; *on_ready* failing
    (its address could not be printed) stops it the same way, and its error passes on."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    settle_gc()
    if on_ready is not None:
        try:
            on_ready(server)
        except BaseException:       # nobody can be told where it serves: stopped as on SIGTERM
            log.info("stopping: the ready callback failed")
            await server.stop()
            raise
    await stop.wait()
    log.info("stopping: draining %d in-flight request(s), at most %g s", server.in_flight,
             server.drain_timeout)
    await server.stop()
