"""The OAuth refresh hook: renew a row's access token before it expires, or after a 401.

Skews as Hermes uses them (spec section 6): Codex refreshes 120 s before the JWT ``exp``,
Anthropic 120 s before ``expires_at_ms``. The token request runs with no lock held (a
refresh can take many seconds); the new tokens are then written through one transaction
that re-reads the row, so a refresh done meanwhile by another process is kept, not
overwritten. Only rows that own their secret (spec section 2) are refreshed here: a
borrowed row's secret lives elsewhere and must never be written into auth.json.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from store.authfile import read_store
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import AUTH_OAUTH, STATUS_FIELDS, Row, as_int, ensure_pool, is_owned, pool_rows, row_by_id
from store.paths import Home
from store.transaction import skip_write, transaction

REFRESH_SKEW_SECONDS = 120.0
REFRESH_TIMEOUT = 10.0

# Public token endpoints and client ids of the official CLIs (the ones Hermes logs in with).
TOKEN_URLS: dict[str, str] = {
    "openai-codex": "https://auth.openai.com/oauth/token",
    "anthropic": "https://platform.claude.com/v1/oauth/token",
}
CLIENT_IDS: dict[str, str] = {
    "openai-codex": "app_EMoamEEZ73f0CkXaXp7hrann",
    "anthropic": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
}
# Refresh answers that mean the refresh token itself is gone: the row is dead.
TERMINAL_REFRESH_ERRORS = frozenset({
    "invalid_grant", "invalid_token", "refresh_token_reused", "unauthorized_client",
    "token_revoked", "token_invalidated",
})


def jwt_exp(token: Any) -> float | None:
    """The ``exp`` claim of a JWT (unverified: only used to decide when to refresh)."""
    if not isinstance(token, str) or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, TypeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def expires_at(pool: str, row: Row) -> float | None:
    """Epoch second the row's access token expires, as the provider's client judges it."""
    if pool == "anthropic":
        ms = row.get("expires_at_ms")
        return as_int(ms) / 1000.0 if ms is not None and as_int(ms, -1) > 0 else None
    if pool == "openai-codex":
        return jwt_exp(row.get("access_token"))
    return None


def needs_refresh(pool: str, row: Row, now: float, skew: float = REFRESH_SKEW_SECONDS) -> bool:
    """True for an OAuth row whose token expires within *skew* seconds of *now*."""
    if row.get("auth_type") != AUTH_OAUTH:
        return False
    exp = expires_at(pool, row)
    return exp is not None and exp <= now + skew


class RefreshError(Exception):
    """The token endpoint refused or could not be reached. Never carries a token."""

    def __init__(self, reason: str, *, terminal: bool = False, status: int | None = None) -> None:
        self.reason = reason
        self.terminal = terminal
        self.status = status
        super().__init__(reason)


@dataclass(frozen=True)
class RefreshResult:
    ok: bool
    row_id: str
    reason: str | None = None      # why it failed (a RefreshError reason), or a note
    terminal: bool = False         # the refresh token is dead: re-login needed
    by_other: bool = False         # someone else refreshed the row meanwhile; theirs was kept


def request_tokens(token_url: str, refresh_token: str, client_id: str | None,
                   timeout: float = REFRESH_TIMEOUT) -> dict[str, Any]:
    """POST a refresh_token grant (form-encoded); return the JSON answer or raise RefreshError."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if client_id:
        form["client_id"] = client_id
    req = urllib.request.Request(
        token_url, data=urllib.parse.urlencode(form).encode(), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json",
                 "User-Agent": "hermes-admin-refresh"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        code = _error_code(exc.read() or b"") or f"http_{exc.code}"
        raise RefreshError(f"token endpoint answered {exc.code} {code}",
                           terminal=code in TERMINAL_REFRESH_ERRORS, status=exc.code) from None
    except OSError as exc:
        raise RefreshError(f"token endpoint unreachable: {type(exc).__name__}") from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise RefreshError("token endpoint answered something that is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("access_token"), str) \
            or not body["access_token"]:
        raise RefreshError("token endpoint answer has no access_token")
    return body


def _error_code(raw: bytes) -> str | None:
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    err = body.get("error")
    if isinstance(err, dict):
        err = err.get("code") or err.get("type")
    return err.strip() if isinstance(err, str) and err.strip() else None


class RefreshHook:
    """``hook(home, pool, row_id) -> RefreshResult``: refresh one row's OAuth token.

    *token_urls* / *client_ids* override the provider defaults (tests and the demo point
    them at a loopback endpoint). *clock* is injectable.
    """

    def __init__(self, token_urls: Mapping[str, str] | None = None,
                 client_ids: Mapping[str, str] | None = None, *,
                 timeout: float = REFRESH_TIMEOUT, clock: Callable[[], float] = time.time,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.token_urls = {**TOKEN_URLS, **(token_urls or {})}
        self.client_ids = {**CLIENT_IDS, **(client_ids or {})}
        self.timeout = timeout
        self.clock = clock
        self.lock_timeout = lock_timeout

    def __call__(self, home: Home, pool: str, row_id: str) -> RefreshResult:
        snap = read_store(home)
        row = row_by_id(pool_rows(snap.doc or {}, pool), row_id)
        if row is None:
            return RefreshResult(False, row_id, "row no longer in the store")
        if row.get("auth_type") != AUTH_OAUTH or not row.get("refresh_token"):
            return RefreshResult(False, row_id, "not an OAuth row with a refresh token")
        if not is_owned(pool, row):
            return RefreshResult(False, row_id, "borrowed source: its owner refreshes it")
        url = self.token_urls.get(pool)
        if not url:
            return RefreshResult(False, row_id, f"no token endpoint known for pool {pool}")
        old_refresh = row["refresh_token"]
        try:
            tokens = request_tokens(url, old_refresh, self.client_ids.get(pool), self.timeout)
        except RefreshError as exc:
            return RefreshResult(False, row_id, exc.reason, terminal=exc.terminal)
        return self._store(home, pool, row_id, old_refresh, tokens)

    def _store(self, home: Home, pool: str, row_id: str, old_refresh: str,
               tokens: dict[str, Any]) -> RefreshResult:
        now = self.clock()
        by_other = gone = False
        with transaction(home, lock_timeout=self.lock_timeout) as doc:
            row = row_by_id(ensure_pool(doc, pool), row_id)
            if row is None:
                gone = True
                skip_write()
            if row.get("refresh_token") != old_refresh:
                # Another process refreshed first; its tokens are newer than ours.
                by_other = True
                skip_write()
            row["access_token"] = tokens["access_token"]
            if isinstance(tokens.get("refresh_token"), str) and tokens["refresh_token"]:
                row["refresh_token"] = tokens["refresh_token"]
            expires_in = tokens.get("expires_in")
            if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
                row["expires_at_ms"] = int((now + float(expires_in)) * 1000)
            row["last_refresh"] = now
            for f in STATUS_FIELDS:
                row[f] = None
            row["last_status"] = "ok"
            row.pop("failure_reason", None)
        if gone:
            return RefreshResult(False, row_id, "row removed while refreshing")
        if by_other:
            return RefreshResult(True, row_id, "refreshed by another process meanwhile", by_other=True)
        return RefreshResult(True, row_id)
