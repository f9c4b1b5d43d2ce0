"""The shapes of auth.json: the document, pool keys and credential rows.

Rows stay the JSON objects Hermes wrote (plain dicts). That way unknown fields,
null-vs-absent and key order survive every write by construction; this module
names the fields, gives typed accessors and builds new rows.
"""

from __future__ import annotations

import difflib
import math
import re
import secrets as _secrets
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, TypedDict

STATUS_OK = "ok"
STATUS_EXHAUSTED = "exhausted"
STATUS_DEAD = "dead"

AUTH_API_KEY = "api_key"
AUTH_OAUTH = "oauth"

SOURCE_MANUAL = "manual"

# Always written, as null when unset (spec section 2).
STATUS_FIELDS = (
    "last_status",
    "last_status_at",
    "last_error_code",
    "last_error_reason",
    "last_error_message",
    "last_error_reset_at",
)
SECRET_FIELDS = ("access_token", "refresh_token", "agent_key")

# Hermes-owned OAuth pairs keep their secret in the file although not `manual`.
_OWNED_OAUTH = {("nous", "device_code"), ("openai-codex", "device_code"), ("anthropic", "hermes_pkce"),
                ("xai-oauth", "device_code")}

STRATEGIES = ("fill_first", "round_robin", "random", "least_used")
DEFAULT_STRATEGY = "fill_first"

_POOL_KEY_RE = re.compile(r"^(?:[a-z0-9][a-z0-9._-]*|custom:[a-z0-9][a-z0-9._-]*)$")


class Row(TypedDict, total=False):
    """A credential row as stored. Any other key is kept as is."""

    id: str
    label: str
    auth_type: str
    priority: int
    source: str
    access_token: str
    refresh_token: str
    last_status: str | None
    last_status_at: float | str | None
    last_error_code: int | None
    last_error_reason: str | None
    last_error_message: str | None
    last_error_reset_at: float | str | None
    request_count: int
    status_cleared_at: float
    base_url: str
    failure_reason: str
    model_cooldowns: dict[str, float]
    model_cooldown_observed_at: dict[str, float]
    secret_fingerprint: str


Doc = dict[str, Any]


def custom_pool_key(name: str) -> str:
    """``custom:<name>`` with the name lower-cased and spaces turned into ``-``."""
    return "custom:" + name.strip().lower().replace(" ", "-")


def validate_pool_key(key: str) -> str:
    """Return *key* if it is a well-formed pool key, else raise ValueError saying why."""
    if not isinstance(key, str) or not key:
        raise ValueError("pool key is empty")
    if key != key.lower():
        raise ValueError(f"pool key {key!r} must be lower-case (Hermes matches pool keys exactly)")
    if " " in key:
        raise ValueError(f"pool key {key!r} has a space; custom pools are custom:<name-with-dashes>")
    if not _POOL_KEY_RE.match(key):
        raise ValueError(
            f"pool key {key!r} is not a provider id (e.g. openrouter) or custom:<name>"
        )
    return key


def is_manual_source(source: Any) -> bool:
    s = str(source or "").strip().lower()
    return s == SOURCE_MANUAL or s.startswith(SOURCE_MANUAL + ":")


def is_owned(pool: str, row: Row) -> bool:
    """True when the row keeps its secret in auth.json; borrowed rows never get one."""
    source = str(row.get("source") or "")
    return is_manual_source(source) or (pool, source) in _OWNED_OAUTH


def row_secrets(row: Row, env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret a row holds or borrows, for redacting free text such as a provider's
    error message (providers sometimes echo the key back)."""
    out = [v for f in SECRET_FIELDS if isinstance(v := row.get(f), str) and v]
    source = str(row.get("source") or "")
    if env and source.startswith("env:") and env.get(source[4:]):
        out.append(env[source[4:]])
    return out


def pools(doc: Doc) -> dict[str, list[Row]]:
    """The `credential_pool` mapping, tolerating its absence (read-only view)."""
    cp = doc.get("credential_pool")
    return cp if isinstance(cp, dict) else {}


def pool_rows(doc: Doc, pool: str) -> list[Row]:
    rows = pools(doc).get(pool)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def row_by_id(rows: Iterable[Any], row_id: str) -> Row | None:
    """The first row of *rows* whose id is *row_id* (ids compared as text), or None.

    The one row-by-id lookup: entries that are not objects are passed over, so it serves a
    pool's raw list (``ensure_pool``) as well as :func:`pool_rows`.
    """
    return next((r for r in rows if isinstance(r, dict) and str(r.get("id")) == row_id), None)


def ensure_pool(doc: Doc, pool: str) -> list[Row]:
    """The mutable row list of *pool*, created if missing (for writers only)."""
    cp = doc.get("credential_pool")
    if not isinstance(cp, dict):
        cp = doc["credential_pool"] = {}
    rows = cp.get(pool)
    if not isinstance(rows, list):
        rows = cp[pool] = []
    return rows


def as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return default
    return default


def priority_of(row: Row) -> int:
    return as_int(row.get("priority"), 0)


def sorted_rows(rows: Iterable[Row]) -> list[Row]:
    """Rows in the order Hermes tries them: priority, then file order (stable)."""
    return sorted(rows, key=priority_of)


def parse_epoch(value: Any) -> float | None:
    """Epoch seconds from seconds, milliseconds (> 1e12), numeric strings or ISO-8601.

    Mirrors Hermes's reset-time parser; None for anything unparseable or <= 0.
    """
    if value is None or isinstance(value, bool) or value == "":
        return None
    numeric: float | None = None
    if isinstance(value, (int, float)):
        try:
            numeric = float(value)
        except OverflowError:   # an integer too large for a float is no time either
            return None
    elif isinstance(value, str):
        raw = value.strip()
        if not raw:
            return None
        try:
            numeric = float(raw)
        except ValueError:
            try:
                dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            except ValueError:
                return None
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            return dt.timestamp()
    else:
        return None
    if not math.isfinite(numeric) or numeric <= 0:
        return None
    return numeric / 1000.0 if numeric > 1e12 else numeric


def new_id(taken: Iterable[str] = ()) -> str:
    """A fresh 6-hex row id, like Hermes makes, not colliding with *taken*."""
    used = set(taken)
    while True:
        rid = _secrets.token_hex(3)
        if rid not in used:
            return rid


def find_target(rows: list[Row], target: str) -> int:
    """Index into *rows* (priority order) of TARGET: id, then unique label, then 1-based index.

    Raises ValueError with an operator-facing reason.
    """
    raw = str(target or "").strip()
    if not raw:
        raise ValueError("no credential target given")
    for i, row in enumerate(rows):
        if row.get("id") == raw:
            return i
    matches = [i for i, r in enumerate(rows) if str(r.get("label") or "").strip().lower() == raw.lower()]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        which = ", ".join(f"#{i + 1} id={rows[i].get('id')}" for i in matches)
        raise ValueError(f"label {raw!r} matches {len(matches)} credentials ({which}); use the id or #index")
    if raw.lstrip("#").isdigit():
        n = int(raw.lstrip("#"))
        if 1 <= n <= len(rows):
            return n - 1
        raise ValueError(f"no credential #{n} (the pool has {len(rows)})")
    names = [str(r.get(f)) for r in rows for f in ("id", "label") if r.get(f)]
    close = difflib.get_close_matches(raw, names, n=3, cutoff=0.7)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise ValueError(f"no credential with id, label or index {raw!r}{hint}")
