"""Secrets leave hermes-admin only as fingerprints like ``sk-or-…a1B2``."""

from __future__ import annotations

import re
from typing import Iterable

ELLIPSIS = "…"
# Below this length even the last four characters reveal too much of the key.
_MIN_TAIL_LEN = 16
_PREFIX_RE = re.compile(r"^[A-Za-z0-9]{1,5}(?:-[A-Za-z]{1,5})?-")


def fingerprint(secret: str | None, tail: int = 4) -> str | None:
    """Short, non-reversible display form of a secret: vendor prefix + last *tail* (4).

    A longer *tail* is only for telling apart two keys that share prefix and last 4.

    >>> fingerprint("sk-or-v1-0123456789abcdefa1B2")
    'sk-or-…a1B2'
    """
    if not secret:
        return None
    secret = str(secret).strip()
    m = _PREFIX_RE.match(secret)
    prefix = m.group(0) if m and len(m.group(0)) < len(secret) // 2 else ""
    if prefix.startswith("eyJ"):
        # A JWT head is no vendor prefix, and "eyJ" + 8 characters is itself key-shaped
        # (store.redaction.redact.KEY_PATTERNS): the fingerprint would be redacted again.
        prefix = ""
    if len(secret) < _MIN_TAIL_LEN:
        return f"{prefix}{ELLIPSIS}" if prefix else ELLIPSIS
    return f"{prefix}{ELLIPSIS}{secret[-max(4, tail):]}"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each secret in *text* by its fingerprint."""
    for s in sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True):
        text = text.replace(s, fingerprint(s) or ELLIPSIS)
    return text
