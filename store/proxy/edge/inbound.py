"""Who may use the proxy: any bearer on loopback, only listed client keys elsewhere.

The rule is by the bind address as written: ``127.0.0.1``, ``::1`` and ``localhost`` are
loopback; anything else (``0.0.0.0``, a LAN address, even ``127.0.0.2``) is exposed and
needs a client-keys file. The file holds one key per line (``#`` comments allowed) and
must be mode 0600 or stricter: a key file others can read is refused, not trusted.
Keys are compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from store import safeio
from store.errors import HermesAdminError, StoreUnreadable

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
CLIENT_KEYS_CAP = 1024 * 1024     # one key a line; a larger file is a wrong path, refused


def is_loopback(host: str) -> bool:
    """True when *host* is one of the three loopback spellings we accept without keys."""
    return host.strip().strip("[]").lower() in LOOPBACK_HOSTS


class InboundAuthError(HermesAdminError):
    """The proxy may not start: exposed without a usable client-keys file (exit 3)."""

    exit_code = 3


def load_client_keys(path: Path) -> list[bytes]:
    """The keys in *path*; raises :class:`InboundAuthError` naming it when missing, loose,
    empty or over :data:`CLIENT_KEYS_CAP` bytes (read bounded, never whole)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InboundAuthError(f"{path}: client-keys file missing; a non-loopback bind needs one "
                               f"(one key per line, chmod 600)") from None
    except OSError as exc:
        raise InboundAuthError(f"{path}: cannot read client-keys file ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InboundAuthError(f"{path}: client-keys file is not a regular file")
    if st.st_mode & 0o077:
        raise InboundAuthError(f"{path}: client-keys file is mode {stat.S_IMODE(st.st_mode):04o}; "
                               f"it must be 0600 (chmod 600 {path})")
    try:
        got = safeio.read_checked(path, CLIENT_KEYS_CAP)      # bounded: a huge file is refused
    except StoreUnreadable as exc:
        raise InboundAuthError(f"{path}: client-keys file {exc.reason}") from None
    if got is None:
        raise InboundAuthError(f"{path}: client-keys file missing")
    try:
        text = got[0].decode("utf-8")
    except UnicodeDecodeError:
        raise InboundAuthError(f"{path}: cannot read client-keys file (not UTF-8)") from None
    keys = [line.strip().encode() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]
    if not keys:
        raise InboundAuthError(f"{path}: client-keys file holds no key")
    return keys


@dataclass
class Gate:
    """Checks one request's ``Authorization`` header. ``keys is None`` means open (loopback)."""

    keys: list[bytes] | None = field(default=None, repr=False)

    @property
    def open(self) -> bool:
        return self.keys is None

    def allows(self, authorization: str | None) -> bool:
        if self.keys is None:
            return True
        raw = authorization or ""
        if raw[:7].lower() != "bearer ":
            return False
        presented = raw[7:].strip().encode()
        ok = False
        # Compare against every key (no early exit) so timing says nothing about which matched.
        for key in self.keys:
            ok |= hmac.compare_digest(presented, key)
        return ok


def gate_for(host: str, keys_file: Path) -> Gate:
    """The gate for a bind on *host*: open on loopback, else the keys in *keys_file*."""
    if is_loopback(host):
        return Gate(None)
    return Gate(load_client_keys(keys_file))
