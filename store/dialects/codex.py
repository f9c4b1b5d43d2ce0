"""The Codex / OpenAI Responses family: the Codex backend the way Hermes reaches it
(``https://chatgpt.com/backend-api/codex``, Hermes's ``DEFAULT_CODEX_BASE_URL``).

- auth: the row's bearer, plus what the backend's Cloudflare layer lets through
  (``agent/auxiliary_client.py`` ``_codex_cloudflare_headers``, 0.19.0): ``originator:
  codex_cli_rs``, a ``codex_cli_rs``-shaped ``User-Agent``, and ``ChatGPT-Account-ID`` from
  the OAuth token's ``https://api.openai.com/auth`` claim ``chatgpt_account_id`` (a token that
  is no JWT gets no account header: its 401 is then the key's answer). The account header is
  always the row's; a client's own ``originator`` is kept when the layer lets it through
  (``codex_cli_rs``, ``codex_vscode``, ``codex_sdk_ts``, ``Codex...``), as is a Codex
  ``User-Agent``;
- base path: the base holds the version (``<base>/responses``);
- limits: the OpenAI-style headers where sent, and the usage endpoint's body (the reopen
  probe's session and weekly windows);
- usage: Responses' ``usage.input_tokens`` / ``output_tokens`` with their cached and reasoning
  details (streams: ``response.completed``, :mod:`store.dialects.streams`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from store import outside
from store.dialects import openai
from store.dialects.dialect import Credential, Dialect
from store.dialects.readings import LENGTHS, NAME, Reading, Usage, opt_epoch, opt_seconds, usage_of

CODEX_POOL = "openai-codex"
ORIGINATOR = "codex_cli_rs"
USER_AGENT = "codex_cli_rs/0.0.0 (Hermes Agent)"
ACCOUNT_HEADER = "ChatGPT-Account-ID"
_CLAIMS = "https://api.openai.com/auth"
_ORIGINATORS = frozenset({"codex_cli_rs", "codex_vscode", "codex_sdk_ts"})
_CACHE_CAP = 1024
_accounts: dict[str, str | None] = {}


def is_codex_host(base: str) -> bool:
    """A base on ``chatgpt.com`` (the Codex backend)."""
    try:
        host = (urlsplit(base).hostname or "").lower()
    except ValueError:
        return False
    return host == "chatgpt.com" or host.endswith(".chatgpt.com")


def account_id(token: str) -> str | None:
    """The ChatGPT account of a Codex OAuth token (its JWT claim), or None. Cached per token."""
    if token in _accounts:
        return _accounts[token]
    found = None
    parts = token.split(".")
    if len(parts) >= 2:               # as Hermes: a payload is enough
        try:
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        except (ValueError, binascii.Error, RecursionError):
            claims = None
        auth = claims.get(_CLAIMS) if isinstance(claims, dict) else None
        acct = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
        if isinstance(acct, str) and acct and acct.isprintable() and len(acct) <= 200:
            found = acct
    if len(_accounts) >= _CACHE_CAP:
        _accounts.clear()
    _accounts[token] = found
    return found


def allowed_originator(value: str | None) -> bool:
    """A first-party originator the Codex backend's Cloudflare layer lets through."""
    return value is not None and (value in _ORIGINATORS or value.startswith("Codex"))


def attach(headers: Any, cred: Credential) -> Any:
    """A copy of *headers* with the row's bearer and Hermes's Codex headers."""
    sending = headers.copy()
    sending["Authorization"] = "Bearer " + cred.token
    sending.popall(ACCOUNT_HEADER, None)
    acct = account_id(cred.token)
    if acct is not None:
        sending[ACCOUNT_HEADER] = acct
    if not allowed_originator(sending.get("originator")):
        sending["originator"] = ORIGINATOR
    if not (cred.user_agent or "").lower().startswith("codex"):
        sending["User-Agent"] = USER_AGENT
    return sending


def usage(data: Any, notice: outside.Notice | None = None) -> Usage | None:
    """The usage of a JSON answer (every shape: :func:`store.dialects.readings.usage_block`)."""
    return usage_of(data, notice=notice)


def read_codex_usage(body: Any, now: float) -> list[Reading]:
    """Codex's usage endpoint: the session (primary) and weekly (secondary) windows of
    ``rate_limit`` and of each ``additional_rate_limits[]`` entry."""
    if not isinstance(body, Mapping):
        return []
    limits: list[tuple[str, Any]] = [("", body.get("rate_limit"))]
    extra = body.get("additional_rate_limits")
    if isinstance(extra, list):
        for e in extra[:8]:
            if isinstance(e, Mapping):
                name = e.get("limit_name") or e.get("metered_feature")
                tag = name.lower()[:16] if isinstance(name, str) and NAME.fullmatch(name.lower()[:16]) else "extra"
                limits.append((tag + "-", e.get("rate_limit")))
    out = []
    for prefix, rl in limits:
        if not isinstance(rl, Mapping):
            continue
        for key, window in (("primary_window", "session"), ("secondary_window", "weekly")):
            w = rl.get(key)
            if not isinstance(w, Mapping):
                continue
            used = outside.number(w.get("used_percent"), "used_percent", lo=0.0, hi=100.0)
            if used is None:
                continue
            reset = opt_epoch(w.get("reset_at"), now)
            if reset is None:
                after = w.get("reset_after_seconds", w.get("resets_in_seconds"))
                s = None if after is None else outside.seconds(after, "reset_after_seconds")
                reset = None if s is None else now + s
            length = opt_seconds(w.get("limit_window_seconds")) or LENGTHS[window]
            out.append(Reading(prefix + window, "codex-usage", now, utilization=used / 100.0,
                               reset_at=reset, length=length))
    return out


DIALECT = Dialect("codex", attach=attach, readings=openai.readings, reset=openai.reset, usage=usage)
