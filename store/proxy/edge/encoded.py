"""A success that came with a ``Content-Encoding``, though the proxy asks every upstream for
``identity``: its bytes are never relayed unchecked.

gzip and deflate are decoded (:func:`decoder`) and relayed decoded, without the
``Content-Encoding`` (the length is aiohttp's to set): a body read whole up to
:data:`DECODED_CAP`, a stream as it arrives (:class:`DecodedStream`, never more than
:data:`PIECE` bytes of output from one read), so the relay hides the row's key in them and a
stream the upstream cuts still ends in the proxy's error event. An encoding the proxy cannot
decode (br, zstd, anything else) is not relayed: the caller answers with the proxy's error.
An identity answer never comes here: its cost is unchanged.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable

from store.proxy.edge.coding import Refused, decoded

DECODED_CAP = 64 << 20     # a 2xx body read whole, decoded: beyond this it is not relayed
PIECE = 1 << 20            # a stream's output per decode step


class Undecodable(Exception):
    """Encoded bytes the proxy could not decode (a broken or truncated gzip, or over the cap)."""


def identity(encoding: str | None) -> bool:
    """Whether *encoding* (a ``Content-Encoding`` value, None when absent) means plain bytes."""
    return encoding is None or encoding.strip().lower() in ("", "identity")


def decoder(encoding: str) -> zlib._Decompress | None:
    """A decompressor for *encoding* (gzip, deflate), None for one the proxy cannot decode."""
    enc = encoding.strip().lower()
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    return None


def decode_whole(raw: bytes, encoding: str) -> bytes | None:
    """*raw* decoded from *encoding*; None when it cannot be (an unknown encoding, a broken
    or truncated body, more than :data:`DECODED_CAP` bytes decoded). The request bodies'
    bounded decoder (:func:`store.proxy.edge.coding.decoded`): one way to undo a coding."""
    try:
        return decoded(raw, tuple(t for t in (x.strip().lower() for x in encoding.split(",")) if t and t != "identity"),
                       DECODED_CAP)
    except Refused:
        return None


class DecodedStream:
    """An encoded stream's bytes decoded as they arrive: :meth:`read` is the relay's read
    (``b""`` at the end), raising :class:`Undecodable` when the bytes are not the encoding
    they claim or end before it does (the relay treats it as a stream broken)."""

    __slots__ = ("_read", "_d", "_tail", "_begun")

    def __init__(self, read: Callable[[], Awaitable[bytes]], d: zlib._Decompress) -> None:
        self._read = read
        self._d = d
        self._tail = b""
        self._begun = False        # an encoded byte came (an empty body is no broken encoding)

    async def read(self) -> bytes:
        d = self._d
        while True:
            if self._tail:
                data, self._tail = self._tail, b""
            else:
                data = await self._read()
                if not data:
                    if self._begun and not d.eof:
                        raise Undecodable("the encoded stream ended before its encoding did")
                    return b""
                if d.eof:          # bytes after the end of the encoding: not relayed
                    continue
                self._begun = True
            try:
                out = d.decompress(data, PIECE)
            except zlib.error as exc:
                raise Undecodable(f"the stream is not the encoding it claims ({exc})") from None
            self._tail = d.unconsumed_tail
            if out:
                return out
