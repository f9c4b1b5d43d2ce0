"""A success on its way to the client: a 2xx or 3xx relayed as it came, its headers
redacted, a body read whole, a stream (SSE) passed on as it arrives. One that came encoded
(gzip, deflate) is relayed decoded, so it is checked like any other; one in an encoding the
proxy cannot decode is not relayed (:mod:`store.proxy.edge.encoded`).

Its promises (docs/proxy.md, "The relay's promises"):

- the row's key never reaches the client, however the upstream's chunks split it, with or
  without its prefix, plain or JSON-escaped (:class:`store.proxy.edge.sse.StreamRedaction`: a
  hold-back of at most the key's length less one byte, six times that after a backslash,
  nothing held at an event boundary); an encoded answer is checked decoded, or not relayed;
- bytes that reached the client are never tried again elsewhere: a stream the upstream
  breaks has its partial event made the proxy's error event in the protocol's form (its cut
  JSON completed, :mod:`store.proxy.edge.sse_close`), or closed and followed by it, so the
  SDKs raise the proxy's error wherever the cut fell, even inside a ``data:`` line; the
  route takes the strike, no key is benched; a drain that runs out says so the same way;
- a client that goes away is let go at once, even while the upstream is silent: its
  handler is cancelled (the server's ``handler_cancellation``), the upstream connection is
  closed, and the in-flight counts and holds on its key end with the request.

The client gets its bytes before the proxy's bookkeeping: a success's verdict and what
follows from it (the breaker, the pin, the counters, the usage feed, a headroom bench) run
on the loop's next turn for a body read whole (aiohttp writes it in this one), and right
after the first write for a stream; either way before any request that arrives later, and
exactly once per answer. A stream's usage is read from each chunk after it is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from store.agent.outcomes import MALFORMED, Result
from store.dialects.streams import StreamUsage
from store.proxy.edge.encoded import DecodedStream, Undecodable, decode_whole, decoder, identity
from store.proxy.edge.redacting import ProxySecrets
from store.proxy.edge.sse import Framing, StreamRedaction, write_error
from store.proxy.edge.wire import (
    DROP_RESPONSE,
    Answer,
    OwnToken,
    kept,
    redacted_headers,
    transport_kind,
)
from store.proxy.observing import requests as trace
from store.proxy.observing.spend import Spend
from store.proxy.observing.stats import Stats
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.upstreams import Breakers, display

log = logging.getLogger("hermes_admin.proxy")


class Relay:
    """Relays upstream successes to clients (one per proxy, on the event loop); *breakers*
    (the chain's) take the strike of a stream that broke, at *clock*'s time; *mark* puts the
    route's marks on an answer's headers, and *served* takes a success's verdict (the
    forwarder's: the answer's readings, and the usage of a body read whole); a stream's usage
    is read as it passes (:class:`StreamUsage`, never changing a byte) and goes to *spend* at
    its end, ``partial`` when it was cut short."""

    def __init__(self, breakers: Breakers, clock: Callable[[], float], stats: Stats, secrets: ProxySecrets,
                 mark: Callable[[Any, Attempt], None],
                 served: Callable[[Attempt, str, bytes | None], None], spend: Spend | None = None) -> None:
        self.breakers = breakers
        self.clock = clock
        self.spend = spend
        self.stats = stats
        self.secrets = secrets
        self.mark = mark
        self.served = served
        self._own: dict[str, OwnToken] = {}

    async def relay(self, request: web.BaseRequest, up: aiohttp.ClientResponse, attempt: Attempt,
                    base: str, rid: str) -> web.StreamResponse | tuple[Result, Answer | None]:
        """A 2xx or 3xx as it came (headers redacted); a body cut before anything reached
        the client is a route failure the caller may try again."""
        sel = attempt.selection
        headers = kept(up.headers, DROP_RESPONSE)
        redacted_headers(headers, sel.token, lambda: self.secrets.for_row(sel.token))
        own = self._own.get(sel.token)   # an answer's body is the model's: only the row's token is hidden
        if own is None:
            if len(self._own) > 4096:
                self._own.clear()
            own = self._own[sel.token] = OwnToken(sel.token)
        encoding = up.headers.get("Content-Encoding")
        coded = None if identity(encoding) else decoder(encoding or "")
        if coded is None and not identity(encoding):     # bytes it cannot check: never relayed
            return _unchecked(base, up.status, encoding), None
        if coded is not None:
            headers.popall("Content-Encoding", None)      # relayed decoded
        if "text/event-stream" not in up.headers.get("Content-Type", ""):
            try:
                data = await up.read()
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                kind = transport_kind(exc)
                return Result.failed_transport(kind, f"{display(base)}: HTTP {up.status}, then {kind} "
                                                     f"before the body ended"), None
            if coded is not None and data:     # an empty body (a 204, a HEAD) has nothing to decode
                plain = decode_whole(data, encoding or "")
                if plain is None:
                    return _unchecked(base, up.status, encoding), None
                data = plain
            resp = web.Response(status=up.status, body=own.hide(data), headers=headers)
            self.mark(resp.headers, attempt)
            # The verdict and its bookkeeping on the loop's next turn: aiohttp writes the
            # answer in this one (the handler returns it, nothing awaits before the write).
            after_write(self._judge, attempt, base, data)
            return resp
        trace.upstream_end(first_byte=True)
        resp = web.StreamResponse(status=up.status, headers=headers)
        self.mark(resp.headers, attempt)
        await resp.prepare(request)
        scrub, frame = StreamRedaction(own), Framing()
        tap = StreamUsage(attempt.want.protocol if attempt.want is not None else "openai", log.warning) \
            if self.spend is not None else None
        read = up.content.readany if coded is None else DecodedStream(up.content.readany, coded).read
        sent, whole, judged = 0, False, False
        try:
            while True:
                try:
                    chunk = await read()
                except (aiohttp.ClientError, OSError, TimeoutError, Undecodable) as exc:
                    # Bytes already reached the client: no retry; the route takes the strike.
                    if not judged:       # the success first: the strike comes after it
                        judged = self._judge(attempt, base, None)
                    self.stats.stream_failures += 1
                    trace.answered_as(trace.STREAM_BROKEN)
                    kind = "undecodable" if isinstance(exc, Undecodable) else transport_kind(exc)
                    self.breakers.failed(base, self.clock(), answered=True,
                                               what=f"stream broke after {sent} bytes ({kind})")
                    log.warning("request %s: %s/%s: stream broke after %d bytes (%s); no key benched", rid,
                                sel.pool, sel.row_id, sent, kind)
                    await self._in_band(request, resp, scrub, frame, f"upstream stream broke after {sent} bytes",
                                        "upstream_stream_broken", 502, rid)
                    break
                if not chunk:
                    whole = True
                    rest = scrub.flush()
                    if rest:
                        await resp.write(rest)
                    break
                out = scrub.feed(chunk)
                try:
                    if out:
                        frame.note(out)
                        await resp.write(out)
                        if not judged:       # the verdict once the first bytes are on their way
                            judged = self._judge(attempt, base, None)
                finally:                     # its usage read after the bytes went (every chunk, in order)
                    if tap is not None:
                        tap.feed(chunk)
                sent += len(chunk)
            await resp.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            up.close()      # the client went away: so does the upstream connection, at once
        except asyncio.CancelledError:
            if _gone(request):      # the client went away (its handler is cancelled): nothing to say
                up.close()
                raise
            # The drain bound passed: say so in-band.
            await asyncio.shield(self._in_band(request, resp, scrub, frame, "the proxy is shutting down",
                                               "shutting_down", 503, rid))
            raise
        finally:       # every stream is an answer of its key
            if not judged:
                self._judge(attempt, base, None)
            if self.spend is not None:
                self.spend.answer(attempt, tap.end() if tap is not None else None, partial=not whole)
        return resp

    def _judge(self, attempt: Attempt, base: str, body: bytes | None) -> bool:
        """The success's verdict (*served*), once its bytes are written or on their way; a
        failure in it is logged, never a second answer to a client that has its own."""
        try:
            self.served(attempt, base, body)
        except Exception as exc:
            log.error("the verdict on a success of %s/%s failed (%s)", attempt.selection.pool,
                      attempt.selection.row_id, type(exc).__name__, exc_info=True)
        return True

    async def _in_band(self, request: web.BaseRequest, resp: web.StreamResponse, scrub: StreamRedaction,
                       frame: Framing, message: str, kind: str, code: int, rid: str) -> None:
        """The proxy's error event after what the upstream sent: what was held back, then the
        partial event made the proxy's error event, or closed and followed by it, in the
        protocol's form (the SDKs raise it, wherever the cut fell)."""
        rest = scrub.flush()
        frame.note(rest)
        await write_error(resp, rest + frame.ending(request.path, message, kind, code, rid))


def _unchecked(base: str, status: int, encoding: str | None) -> Result:
    """A success whose bytes the proxy cannot check for keys: not relayed, the route's fault
    (nothing reached the client: another route may serve)."""
    return Result.failed_transport(MALFORMED, f"{display(base)}: HTTP {status} with a body in an encoding "
                                              f"the proxy cannot check for keys ({encoding}); not relayed")


def after_write(fn: Callable[..., object], *args: object) -> None:
    """*fn(*args)* on the loop's next turn: after the answer the handler returns in this one
    is written (aiohttp writes it in the same turn). A traced request runs it in its one
    deferred callback, before its log line (:func:`store.proxy.observing.requests.after_answer`)."""
    if not trace.after_answer(fn, *args):
        asyncio.get_running_loop().call_soon(fn, *args)


def _gone(request: web.BaseRequest) -> bool:
    """Whether the client of *request* has closed its connection."""
    transport = request.transport
    return transport is None or transport.is_closing()
