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
import re
import stat
from pathlib import Path
from typing import Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from store import safeio
from store.errors import BadInput, StoreUnreadable
from store.model import Row
from store.redaction.redact import looks_like_key

SECRET_ENV = "HERMES_ADMIN_FLEET_SECRET"
MIN_SECRET_BYTES = 16
SECRET_CAP = 64 * 1024       # a secret is a line; a larger file is a wrong path, refused
FP_PREFIX = "fl:"
HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def load_secret(secret_file: str | os.PathLike[str] | None,
                environ: Mapping[str, str] | None = None) -> bytes:
    """The fleet secret from *secret_file* (must be mode 0600 or stricter), else the env.

    Raises BadInput (exit 2) when neither is given or the secret is too short, and
    StoreUnreadable (exit 3) naming the file when it is missing, unreadable, readable by
    others or over :data:`SECRET_CAP` bytes (it is read bounded, never whole).
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
        got = safeio.read_checked(path, SECRET_CAP)      # bounded, never blocks on a swapped-in FIFO
        if got is None:
            raise StoreUnreadable(path, "cannot read the fleet secret file: it is gone")
        raw = got[0].strip()
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
    """Display form of a fleet fingerprint: ``fl:`` + 12 hex (``fleet bench`` takes it)."""
    return FP_PREFIX + fp[:12]


def full(fp: str) -> str:
    """The whole fingerprint in the same form: ``fl:`` + 64 hex (``fleet status --json``)."""
    return FP_PREFIX + fp


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


def host_name_problem(name: str) -> str | None:
    """Why *name* cannot be a fleet host name (None when it can): letters, digits, ``. _ -``,
    at most 63, and nothing key-shaped (a host name is published to Redis as it is)."""
    if not HOST_RE.match(name):
        return "is not a host name (letters, digits, . _ -; max 63)"
    if looks_like_key(name):
        return "looks like an API key; a host name is published to Redis as it is"
    return None


# How a Redis URL is shown: ``redis://host:port/db``, the password (in the userinfo or a
# ``password=`` query argument) as ``***``. URL userinfo is a secret (RELIABILITY 37).
_DEFAULT_PORT = 6379
MASK = "***"


def safe_url(url: str) -> str:
    """*url* as ``scheme://[user:***@]host:port/db[?query]``: defaults filled in, so every
    output names the same server the same way, and any password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable redis URL>"
    query = "&".join(f"{k}={MASK}" if k == "password" else f"{k}={v}" if eq else k
                     for k, eq, v in (a.partition("=") for a in parts.query.split("&") if a))
    user = f"{parts.username or ''}:{MASK}@" if parts.password is not None else (
        f"{parts.username}@" if parts.username else "")
    if parts.scheme == "unix":
        return f"unix://{user}{parts.path}" + (f"?{query}" if query else "")
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    db = parts.path.strip("/") or "0"
    return urlunsplit((parts.scheme, f"{user}{host}:{port or _DEFAULT_PORT}", f"/{db}", query, ""))


def url_passwords(url: str) -> list[str]:
    """Every form in which *url*'s password could be echoed: as written, and decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password] + [v for k, _eq, v in (a.partition("=") for a in parts.query.split("&"))
                                if k == "password"]
    out: list[str] = []
    for pw in found:
        if pw:
            out += [pw, unquote(pw)]
    return sorted(set(out), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """*text* (an error message) with the URL shown safe and its password made ``***``. A
    safe form already in *text* stays as it is: it may begin with *url* itself
    (``redis://h`` is ``redis://h:6379/0``), which must not be filled in twice."""
    safe = safe_url(url)
    if url and url != safe:
        text = safe.join(piece.replace(url, safe) for piece in text.split(safe))
    for pw in url_passwords(url):
        text = text.replace(pw, MASK)
    return text
