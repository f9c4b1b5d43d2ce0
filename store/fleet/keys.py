"""Fleet identities: the fleet secret, fleet fingerprints of keys, and safe Redis URLs.

A key's **fleet fingerprint** is HMAC-SHA256(fleet secret, key). Every host of a fleet
holding the same key computes the same fingerprint, and a Redis reader without the
secret can neither recover a key from it nor confirm a guessed one (a plain sha256 of
the key would allow the second). Keys never leave the host; only fingerprints do.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit, urlunsplit

from store.errors import BadInput, StoreUnreadable
from store.model import Row

SECRET_ENV = "HERMES_ADMIN_FLEET_SECRET"
MIN_SECRET_BYTES = 16
FP_PREFIX = "fl:"


def load_secret(secret_file: str | os.PathLike[str] | None,
                environ: Mapping[str, str] | None = None) -> bytes:
    """The fleet secret from *secret_file* (must be mode 0600 or stricter), else the env.

    Raises BadInput (exit 2) when neither is given or the secret is too short, and
    StoreUnreadable (exit 3) when the file is missing, unreadable or readable by others.
    """
    env = os.environ if environ is None else environ
    if secret_file:
        path = Path(secret_file)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise StoreUnreadable(path, f"cannot read the fleet secret file: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise StoreUnreadable(path, "the fleet secret file is not a regular file")
        if st.st_mode & 0o077:
            raise StoreUnreadable(path, f"the fleet secret file has mode {stat.S_IMODE(st.st_mode):04o}; "
                                        "it must be 0600", f"chmod 600 {path}")
        try:
            raw = path.read_bytes().strip()
        except OSError as exc:
            raise StoreUnreadable(path, f"cannot read the fleet secret file: {exc.strerror}") from None
        where = "--secret-file"
    else:
        raw = env.get(SECRET_ENV, "").strip().encode("utf-8")
        where = f"${SECRET_ENV}"
        if not raw:
            raise BadInput("--secret-file", f"no fleet secret: give --secret-file PATH (mode 0600) or set {SECRET_ENV}")
    if len(raw) < MIN_SECRET_BYTES:
        raise BadInput(where, f"the fleet secret must be at least {MIN_SECRET_BYTES} bytes")
    return raw


def fleet_fingerprint(secret: bytes, identity: str) -> str:
    """HMAC-SHA256 of a key identity (``store.pools.policy.secret_key``) under the fleet secret."""
    return hmac.new(secret, identity.encode("utf-8"), hashlib.sha256).hexdigest()


def short(fp: str) -> str:
    """Display form of a fleet fingerprint: ``fl:`` + 12 hex."""
    return FP_PREFIX + fp[:12]


def row_identity(row: Row, env: Mapping[str, str] | None = None) -> str | None:
    """What names a row's key across hosts: the secret it holds or borrows from the env,
    else its stored ``secret_fingerprint``; None when the row has neither."""
    token = row.get("access_token")
    if isinstance(token, str) and token:
        return "token:" + token
    source = str(row.get("source") or "")
    if env and source.startswith("env:") and env.get(source[4:]):
        return "token:" + env[source[4:]]
    fp = row.get("secret_fingerprint")
    if isinstance(fp, str) and fp:
        return "fp:" + fp
    return None


def row_fleet_fp(secret: bytes, row: Row, env: Mapping[str, str] | None = None) -> str | None:
    ident = row_identity(row, env)
    return fleet_fingerprint(secret, ident) if ident else None


# REDACT-BOUNDARY: a local stand-in for store/redaction/redact.py (branch `hostile`); switch every
# caller of safe_url/scrub to the redactor when that branch is merged.
def safe_url(url: str) -> str:
    """*url* with any password replaced by ``***`` (user names and hosts stay)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable redis URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


# REDACT-BOUNDARY: see safe_url.
def scrub(text: str, url: str) -> str:
    """*text* (an error message) with the URL's password, and the URL itself, made safe."""
    pw = url_password(url)
    text = text.replace(url, safe_url(url))
    if pw:
        text = text.replace(pw, "***")
    return text
