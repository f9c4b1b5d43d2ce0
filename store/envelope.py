"""Hermes's encryption at rest: the envelope ``hermes encrypt enable`` turns auth.json and
.env into.

The layout (Hermes PR #32783): the magic bytes ``HRMSENC``, one version byte, a 12-byte
nonce, then AES-256-GCM ciphertext ending in its 16-byte tag. hermes-admin holds no key
for it, so such a file is recognised and reported (:class:`store.errors.EncryptedStore`,
exit 3), never parsed as JSON or .env text and never written. Only a file that has the
exact magic and is long enough to hold the rest is called encrypted: any other binary file
keeps its own error (not UTF-8, invalid JSON).
"""

from __future__ import annotations

import os
from pathlib import Path

from store import safeio
from store.errors import EncryptedStore, StoreUnreadable

MAGIC = b"HRMSENC"
NONCE_BYTES = 12
TAG_BYTES = 16
# magic + version + nonce + the GCM tag of an empty plaintext: nothing shorter is an envelope.
MIN_BYTES = len(MAGIC) + 1 + NONCE_BYTES + TAG_BYTES
REASON = ("encrypted by Hermes (`hermes encrypt`, envelope version {version}); hermes-admin "
          "holds no key for it and cannot read it")
HINT = ("nothing was written; to manage this home here, turn encryption off with "
        "`hermes encrypt disable`, or use Hermes's own `hermes auth` commands while it is on")


def version_of(raw: bytes) -> int | None:
    """The envelope version when *raw* is Hermes's encrypted envelope, else None."""
    if len(raw) < MIN_BYTES or not raw.startswith(MAGIC):
        return None
    return raw[len(MAGIC)]


def error(path: Path, version: int) -> EncryptedStore:
    """The one message every reader gives for an encrypted *path*."""
    return EncryptedStore(path, REASON.format(version=version), HINT)


def check(raw: bytes, path: Path) -> None:
    """Raise :class:`EncryptedStore` naming *path* when *raw* is an envelope."""
    version = version_of(raw)
    if version is not None:
        raise error(path, version)


def head(path: Path, cap: int) -> bytes | None:
    """The first bytes of *path* (enough to tell an envelope), None when it is missing or
    cannot be opened as a regular file (its own reader reports that)."""
    try:
        fd = safeio.open_checked(path, os.O_RDONLY, cap)
    except (FileNotFoundError, StoreUnreadable):
        return None
    try:
        return os.read(fd, MIN_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def refuse_encrypted(paths: list[tuple[Path, int]]) -> None:
    """:class:`EncryptedStore` for the first of *paths* (path, size cap) that is an envelope:
    every verb says so before it reads or writes anything else (exit 3)."""
    for path, cap in paths:
        raw = head(path, cap)
        if raw is not None:
            check(raw, path)
