"""The proxy's one upstream session and its time bounds.

aiohttp keeps a ``sock_read`` bound with a timer it cancels and re-arms on every read: a new
timer per chunk of a stream, per request a few. The bound is the same here, kept another way:
:class:`Reads` notes each answer whose body is being read, and once a second
(:meth:`Reads.cut`, from the proxy's tick) ends each whose byte count stood still for the
bound, as aiohttp's timer does (its reader raises ``ServerTimeoutError``, the connection is
not reused). A body silent for the bound ends within a second after it.
"""

from __future__ import annotations

import logging

import aiohttp

log = logging.getLogger("hermes_admin.proxy")


def open_session(timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
    """The upstream session: *timeout*'s bounds less its read bound (kept by :class:`Reads`).
    No cookie jar: one session serves every client, and one client's upstream cookies must
    not ride along on another's requests. Every request asks for ``Accept-Encoding: identity``
    (the client's own is never forwarded): the proxy checks each answer for keys, so it wants
    them plain; one encoded anyway is decoded or refused (:mod:`store.proxy.edge.encoded`)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=60, ttl_dns_cache=300),
        timeout=aiohttp.ClientTimeout(total=timeout.total, connect=timeout.connect, sock_connect=timeout.sock_connect,
                                      ceil_threshold=timeout.ceil_threshold),
        auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), headers={"Accept-Encoding": "identity"},
        skip_auto_headers=("Accept-Encoding", "User-Agent"))


class Reads:
    """The answers whose bodies are being read, each with when its byte count last moved;
    *limit*: seconds a body may go without a byte (None: unbounded). Event loop only."""

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit
        self.live: dict[aiohttp.ClientResponse, tuple[float, int]] = {}   # answer -> (since, bytes then)

    def watch(self, up: aiohttp.ClientResponse, now: float) -> None:
        """*up*'s body is being read from *now* (:func:`time.monotonic`): bound it, if bounded."""
        if self.limit is not None:
            self.live[up] = (now, 0)

    def done(self, up: aiohttp.ClientResponse) -> None:
        """*up* is released: no longer watched."""
        self.live.pop(up, None)

    def cut(self, now: float) -> int:
        """End each read whose byte count has not moved for :attr:`limit` seconds (at *now*,
        :func:`time.monotonic`); how many were ended. A body received whole is never cut (a
        slow client may hold its relay: the upstream owes nothing more, and an empty body's
        reader is aiohttp's one shared ``EMPTY_PAYLOAD``). Never raises: the proxy's tick
        calls it, and an answer it cannot read is dropped from the watch, logged."""
        limit, ended = self.limit, 0
        for up, (since, seen) in list(self.live.items()):
            try:
                content = up.content
                got = content.total_bytes
                if got != seen:
                    self.live[up] = (now, got)
                elif limit is not None and now - since >= limit and not content.at_eof():
                    del self.live[up]
                    exc = aiohttp.ServerTimeoutError(f"no byte of the answer in {limit:g} s")
                    if up.connection is not None and up.connection.protocol is not None:
                        up.connection.protocol.set_exception(exc)     # not put back in the pool
                    content.set_exception(exc)                        # the reader raises it
                    ended += 1
            except Exception as exc:      # one odd answer never stops the tick
                self.live.pop(up, None)
                log.warning("the read bound could not check an upstream answer (%s); no longer watched",
                            type(exc).__name__)
        return ended
