"""Anthropic Messages through the proxy: the proxy's own errors in Anthropic's shape.

How a credential is attached is the Anthropic dialect's (:mod:`store.dialects.anthropic`).

``anthropic-version`` and the client's ``anthropic-beta`` are passed on as they came; the
client's own ``x-api-key`` or bearer never is (:data:`store.proxy.edge.wire.DROP_REQUEST`).

Errors the proxy makes itself on these paths are ``{"type": "error", "error": {"type",
"message", ...}, "request_id"}``, the shape the Anthropic SDKs parse, with the proxy's own
fields (``code``, ``pools``, ``routes``...) kept inside ``error``. A stream that breaks gets its
``event: error`` from :func:`store.proxy.edge.sse.error_event`, with the type :func:`error_type`
names.
"""

from __future__ import annotations

import json

from aiohttp import web

from store.proxy.edge.wire import ProxyError

# HTTP status -> Anthropic's error type (its API reference, "Errors").
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
          403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
          408: "timeout_error", 413: "request_too_large", 415: "invalid_request_error",
          429: "rate_limit_error", 503: "overloaded_error", 504: "timeout_error", 529: "overloaded_error"}


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

