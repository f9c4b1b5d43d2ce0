"""A request body's ``Content-Encoding``, read at the door (:mod:`store.proxy.edge.door`).

The proxy forwards a body as it came, with its ``Content-Encoding``; the door still has to
read the model it names (its bound, and the per-model scope of a 429). A gzip or deflate
body is decoded for that, bounded by the proxy's body cap: a body that would expand past
the cap is refused with a 413 once the cap is reached, never expanded further (a
decompression bomb costs at most the cap). A body in a coding the proxy cannot read (br,
zstd, compress, an unknown name) is refused with a 415, one that does not decode (cut,
corrupt, trailing bytes) with a 400; both name ``Content-Encoding`` and come before
anything is forwarded. Every ``Content-Encoding`` header counts, in order (a list, as HTTP
reads it); ``identity`` is no coding.

``deflate`` is read as aiohttp reads it: the zlib format (RFC 1950), or a raw deflate
stream when the first byte is no zlib header; a gzip body may hold several members, read
one after the other (as Python's ``gzip`` and most servers do).
"""

from __future__ import annotations

import zlib
from typing import Any

_GZIP = 16 + zlib.MAX_WBITS       # wbits: the gzip wrapper
_ZLIB = zlib.MAX_WBITS            # wbits: the zlib wrapper (HTTP's "deflate")
_RAW = -zlib.MAX_WBITS            # wbits: no wrapper (what some clients send as "deflate")
READABLE = ("gzip", "x-gzip", "deflate")
MAX_CODINGS = 3       # codings on one body (each step is bounded by the cap, and costs up to it)
MAX_MEMBERS = 64      # gzip members in one body (a body of empty members is a loop per 20 bytes)


class Refused(Exception):
    """The body cannot be read for its model: the answer's *status*, *kind* and *message*."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def codings(headers: Any) -> tuple[str, ...]:
    """The content codings *headers* name (every ``Content-Encoding``, in the order applied),
    lower case, ``identity`` left out: () for a body as it is."""
    out: list[str] = []
    for value in headers.getall("Content-Encoding", ()):
        for token in value.split(","):
            token = token.strip().lower()
            if token and token != "identity":
                out.append(token)
    return tuple(out)


def decoded(body: bytes, applied: tuple[str, ...], cap: int) -> bytes:
    """*body* with the codings *applied* undone (the last applied first), at most *cap*
    bytes at every step; raises :class:`Refused` for a coding the proxy cannot read, a body
    that does not decode, or one over *cap* once decoded."""
    if not body:
        return body             # nothing to read (a GET that names a coding)
    named = ", ".join(applied)
    unknown = [c for c in applied if c not in READABLE]
    if unknown:
        raise Refused(415, "unsupported_content_encoding",
                      f"Content-Encoding {unknown[0][:40]!r}: the hermes-admin proxy reads a request body in gzip or "
                      f"deflate only (it checks the model the body names); send it so, or without Content-Encoding")
    if len(applied) > MAX_CODINGS:
        raise Refused(415, "unsupported_content_encoding", f"Content-Encoding: {len(applied)} codings on one request "
                      f"body; the hermes-admin proxy reads at most {MAX_CODINGS}")
    for coding in reversed(applied):
        try:
            body = _inflate(body, coding, cap)
        except zlib.error as exc:
            raise Refused(400, "invalid_content_encoding",
                          f"Content-Encoding {named}: the request body does not decode ({exc})") from None
        except OverflowError:
            raise Refused(413, "request_too_large",
                          f"request body over {cap // (1024 * 1024)} MB once decoded "
                          f"(Content-Encoding {named})") from None
    return body


def _inflate(data: bytes, coding: str, cap: int) -> bytes:
    """One coding undone, bounded: OverflowError past *cap*, zlib.error when it does not decode
    (cut short, corrupt, bytes after the end)."""
    if coding == "deflate":
        wbits = _ZLIB if data[0] & 0x0F == 8 else _RAW
    else:
        wbits = _GZIP
    out: list[bytes] = []
    size = 0
    d = zlib.decompressobj(wbits)
    members = 1
    while True:
        room = cap + 1 - size            # never 0 (0 is "unbounded" to zlib)
        chunk = d.decompress(data, room)
        size += len(chunk)
        if size > cap:
            raise OverflowError
        out.append(chunk)
        if d.eof:
            data = d.unused_data
            if not data:
                return b"".join(out)
            if wbits != _GZIP:
                raise zlib.error("bytes after the end of the deflate stream")
            members += 1
            if members > MAX_MEMBERS:
                raise zlib.error(f"more than {MAX_MEMBERS} gzip members")
            d = zlib.decompressobj(wbits)     # the next gzip member
            continue
        data = d.unconsumed_tail
        if not data:            # all the input read, the output not bounded, and no end: cut short
            raise zlib.error("the compressed stream ends early")
