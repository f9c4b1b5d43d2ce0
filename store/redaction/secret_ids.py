"""Which rows hold the same secret, compared by a hash of the full secret, in memory only.

Display fingerprints (``sk-or-…a1B2``) collide too easily to say "same key": two
different keys can share a prefix and last four. Rows are instead compared by
``sha256:<16 hex>`` of the whole secret, the same form Hermes stores as a borrowed
row's ``secret_fingerprint``, so an owned row and a borrowed row holding one key
match too. These identities are for comparison only: they are never printed
(reports show the display fingerprint).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Mapping

from store.model import Row


@functools.lru_cache(maxsize=1 << 16)
def hash_secret(secret: str) -> str:
    """Hermes's ``secret_fingerprint`` form of *secret*: ``sha256:`` + 16 hex.

    Remembered: the console's findings hash every key of every profile on each reload, and
    the keys rarely change (the secrets are in this process's memory anyway).
    """
    digest = hashlib.sha256(secret.encode("utf-8", errors="surrogatepass")).hexdigest()
    return f"sha256:{digest[:16]}"


def key_identity(row: Row, env: Mapping[str, str] | None = None) -> str | None:
    """What identifies the key a row uses: its stored secret, else the `.env` value it
    borrows, else its stored ``secret_fingerprint``; None when nothing identifies it."""
    token = row.get("access_token")
    if isinstance(token, str) and token.strip():
        return hash_secret(token.strip())
    source = str(row.get("source") or "")
    if env and source.startswith("env:"):
        value = env.get(source[4:])
        if value and value.strip():
            return hash_secret(value.strip())
    fp = row.get("secret_fingerprint")
    if isinstance(fp, str) and fp.startswith("sha256:"):
        return fp
    return None


def refresh_identity(row: Row) -> str | None:
    """The identity of an OAuth row's refresh token (single-use: copies invalidate each other)."""
    token = row.get("refresh_token")
    if isinstance(token, str) and token.strip():
        return hash_secret(token.strip())
    return None
