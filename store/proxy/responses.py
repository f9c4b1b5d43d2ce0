"""OpenAI Responses through the proxy, and the Codex backend the way Hermes reaches it.

``POST /v1/responses`` goes to ``<base>/responses``: OpenAI (``https://api.openai.com/v1``),
OpenRouter (``https://openrouter.ai/api/v1``) and the Codex backend
(``https://chatgpt.com/backend-api/codex``, Hermes's ``DEFAULT_CODEX_BASE_URL``), each with
the row's bearer. For the Codex backend Hermes adds what its Cloudflare layer lets through
(``agent/auxiliary_client.py`` ``_codex_cloudflare_headers``, 0.19.0): ``originator:
codex_cli_rs``, a ``codex_cli_rs``-shaped ``User-Agent``, and ``ChatGPT-Account-ID`` from the
OAuth token's ``https://api.openai.com/auth`` claim ``chatgpt_account_id`` (a token that is no
JWT gets no account header, and its 401 is then the key's answer, not a crash).

The account header is always the row's, whatever the client sent: the client's token is
not the one that goes upstream. A client's own ``originator`` is kept when it is one that
Cloudflare layer lets through (``codex_cli_rs``, ``codex_vscode``, ``codex_sdk_ts``, or
``Codex...``, as Hermes's docstring lists them), else replaced by Hermes's; a Codex
``User-Agent`` is kept (Codex CLI sends both).
"""

from __future__ import annotations

import base64
import binascii
import json
from urllib.parse import urlsplit

from multidict import CIMultiDict

CODEX_POOL = "openai-codex"
ORIGINATOR = "codex_cli_rs"
USER_AGENT = "codex_cli_rs/0.0.0 (Hermes Agent)"
ACCOUNT_HEADER = "ChatGPT-Account-ID"
_CLAIMS = "https://api.openai.com/auth"
_ORIGINATORS = frozenset({"codex_cli_rs", "codex_vscode", "codex_sdk_ts"})
_CACHE_CAP = 1024
_accounts: dict[str, str | None] = {}


def is_codex(pool: str, base: str) -> bool:
    """A request to the Codex backend: the pool, or a base on ``chatgpt.com``."""
    if pool == CODEX_POOL:
        return True
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


def attach_codex(headers: CIMultiDict[str], token: str, client_agent: str | None) -> None:
    """Hermes's Codex headers on *headers*, in place, for the row's *token*."""
    headers.popall(ACCOUNT_HEADER, None)
    acct = account_id(token)
    if acct is not None:
        headers[ACCOUNT_HEADER] = acct
    if not allowed_originator(headers.get("originator")):
        headers["originator"] = ORIGINATOR
    if not (client_agent or "").lower().startswith("codex"):
        headers["User-Agent"] = USER_AGENT
