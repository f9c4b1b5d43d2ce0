"""Anthropic Messages through the proxy: the row's credential in the form Anthropic wants,
and the proxy's own errors in Anthropic's shape.

How a credential is attached follows Hermes's ``agent/anthropic_adapter.py``
(``build_anthropic_client``, 0.19.0):

- the ``anthropic`` pool: an OAuth token (the row is ``auth_type: oauth``, or the token
  has an OAuth shape: ``sk-ant-`` but not ``sk-ant-api``, ``eyJ``, ``cc-``) goes as
  ``Authorization: Bearer`` with the OAuth betas Hermes adds (``_OAUTH_ONLY_BETAS``:
  ``claude-code-20250219``, ``oauth-2025-04-20``) merged into the client's
  ``anthropic-beta``; an API key goes as ``x-api-key``;
- an Anthropic-compatible ``custom:`` endpoint: ``x-api-key`` (Hermes's third-party rule:
  no OAuth detection), except the hosts Hermes sends a bearer to
  (``_requires_bearer_auth``: MiniMax's ``/anthropic``, Azure, Palantir Foundry).

``anthropic-version`` and the client's ``anthropic-beta`` are passed on as they came; the
client's own ``x-api-key`` or bearer never is (:data:`store.proxy.wire.DROP_REQUEST`).

Errors the proxy makes itself on these paths are ``{"type": "error", "error": {"type",
"message", ...}, "request_id"}``, the shape the Anthropic SDKs parse, with the proxy's own
fields (``code``, ``pools``, ``routes``...) kept inside ``error``; a stream that breaks gets an
``event: error`` in Anthropic's SSE form.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from store.model import AUTH_OAUTH
from store.proxy.wire import ProxyError

OAUTH_BETAS = ("claude-code-20250219", "oauth-2025-04-20")   # Hermes's _OAUTH_ONLY_BETAS

# HTTP status -> Anthropic's error type (its API reference, "Errors").
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
          403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
          408: "timeout_error", 413: "request_too_large", 415: "invalid_request_error",
          429: "rate_limit_error", 503: "overloaded_error", 504: "timeout_error", 529: "overloaded_error"}


def is_oauth_token(token: str) -> bool:
    """Hermes's ``_is_oauth_token``: an Anthropic OAuth or setup token, by its shape."""
    if not token or token.startswith("sk-ant-api"):
        return False
    return token.startswith(("sk-ant-", "eyJ", "cc-"))


def _bearer_host(base: str) -> bool:
    """Hermes's ``_requires_bearer_auth``: Anthropic-compatible hosts that want a bearer."""
    low = base.rstrip("/").lower()
    try:
        host = (urlsplit(low).hostname or "")
    except ValueError:
        host = ""
    return (low.startswith(("https://api.minimax.io/anthropic", "https://api.minimaxi.com/anthropic"))
            or "azure.com" in low or host == "palantirfoundry.com" or host.endswith(".palantirfoundry.com"))


def uses_oauth(pool: str, auth_type: Any, token: str) -> bool:
    """Whether the row's *token* goes to *pool*'s upstream as an OAuth bearer."""
    if pool != "anthropic" or token.startswith("sk-ant-api"):
        return False
    return auth_type == AUTH_OAUTH or is_oauth_token(token)


def attach(headers: CIMultiDict[str], pool: str, auth_type: Any, token: str, base: str,
           client_beta: str | None) -> None:
    """Set the row's credential on *headers* (the client's own already dropped), in place."""
    for name in ("Authorization", "x-api-key", "anthropic-beta"):
        headers.popall(name, None)
    if uses_oauth(pool, auth_type, token):
        headers["Authorization"] = "Bearer " + token
        betas = [b.strip() for b in (client_beta or "").split(",") if b.strip()]
        betas += [b for b in OAUTH_BETAS if b not in betas]
        headers["anthropic-beta"] = ",".join(betas)
        return
    if client_beta is not None:
        headers["anthropic-beta"] = client_beta
    if pool != "anthropic" and _bearer_host(base):
        headers["Authorization"] = "Bearer " + token
    else:
        headers["x-api-key"] = token


def error_type(status: int) -> str:
    """Anthropic's error type for an HTTP *status*."""
    return _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def shaped(resp: web.StreamResponse) -> web.StreamResponse:
    """*resp* in Anthropic's error shape when the proxy made it (an upstream's own answer,
    already Anthropic's, is left as it is)."""
    if not isinstance(resp, ProxyError):
        return resp
    err = resp.error
    body = {"type": "error", "error": {"type": error_type(resp.status), **{k: v for k, v in err.items()
                                                                             if k not in ("type", "request_id")},
                                       "kind": err.get("type")}}
    if err.get("request_id") is not None:
        body["request_id"] = err["request_id"]
    resp.body = json.dumps(body).encode()
    return resp


async def in_band_error(resp: web.StreamResponse, message: str, code: int, rid: str) -> None:
    """An Anthropic ``event: error`` on a stream already begun (the SDK raises on it)."""
    data = {"type": "error", "error": {"type": error_type(code), "message": message}, "request_id": rid}
    try:
        async with asyncio.timeout(1.0):
            await resp.write(b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n")
    except (ConnectionResetError, aiohttp.ClientConnectionResetError, TimeoutError, RuntimeError):
        pass
