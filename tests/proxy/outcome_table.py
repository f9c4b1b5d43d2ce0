"""The outcome table: whose fault each upstream outcome is, row by row (RELIABILITY 31-33).

Shared by the table tests (tests/proxy/test_edge_outcomes.py: the classifier, then each
row through a running proxy) and the interop test (tests/interop/test_hermes_outcomes.py:
the same scripted errors through Hermes's own ``classify_api_error`` and
``recover_with_credential_pool``). ``hermes_rotates`` is what Hermes 0.19.0 does with the
key; where it differs from ours, ``why`` says why we deliberately differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from store.agent.outcomes import (
    CONNECT,
    KEY,
    MALFORMED,
    REQUEST,
    RESET,
    ROUTE,
    TIMEOUT,
    TLS,
    TRUNCATED,
    Result,
)
from store.proxy.edge.wire import result_of
from tests.proxy.upstream import Behaviour, cut, http, raw, reset, stall


def err(message: str, code: Any = None, type_: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, "code": code, "type": type_ or "error", **extra}}


@dataclass(frozen=True)
class Case:
    """One row: the upstream's answer (or a transport failure) and whose fault it is."""

    name: str
    fault: str
    kind: str
    answer: Behaviour | None = None          # scripted on the upstream (None: *transport*)
    transport: str | None = None             # connect (a closed port) or tls (https to plain HTTP)
    hermes_rotates: bool | None = None       # None: the same as ours (fault == KEY)
    why: str | None = None                   # a deliberate difference from Hermes 0.19.0

    @property
    def benches(self) -> bool:
        return self.fault == KEY

    def result(self) -> Result:
        """The Result the proxy makes of this outcome."""
        a = self.answer
        if a is None:
            return Result.failed_transport(self.transport or CONNECT, self.name)
        if a.kind == "http":
            return result_of(a.status, dict(a.headers), a.body)
        kind = {"reset": RESET, "raw": MALFORMED, "stall": TIMEOUT, "cut": TRUNCATED}[a.kind]
        return Result.failed_transport(kind, self.name)

    def for_hermes(self) -> dict[str, Any]:
        """What the partner needs to build the error the OpenAI SDK would raise."""
        a = self.answer
        if a is None or a.kind != "http":
            kind = "timeout" if a is not None and a.kind == "stall" else "connection"
            return {"transport": kind}
        return {"status": a.status, "headers": dict(a.headers), "body": a.body.decode()}


WAF_PAGE = "<html><head><title>Attention Required! | Cloudflare</title></head><body>blocked</body></html>"
MODERATION = err('anthropic/claude-3-opus requires moderation on OpenRouter. Your input was flagged for '
                 '"violence". No credits were charged.', 403,
                 metadata={"reasons": ["violence"], "flagged_input": "...", "provider_name": None})
WRAPPED_429 = err("Provider returned error", 429, metadata={
    "raw": json.dumps({"error": {"message": "Rate limit exceeded: free-models-per-day"}}),
    "provider_name": "DeepSeek"})

TABLE: list[Case] = [
    # -- the key's fault: bench the row --------------------------------------------------
    Case("429 rate limit", KEY, "rate_limit",
         http(429, {"Retry-After": "600"}, err("Rate limit reached; slow down.", "rate_limit_exceeded"))),
    Case("429 usage limit reached", KEY, "rate_limit",
         http(429, {}, err("The usage limit has been reached for your plan.", "usage_limit_reached"))),
    Case("402 insufficient credits", KEY, "billing",
         http(402, {}, err("Insufficient credits: add more to continue.", "insufficient_credits"))),
    Case("402 usage limit, try again later", KEY, "billing",
         http(402, {}, err("Usage limit exceeded, try again in 5 minutes."))),
    Case("401 invalid api key", KEY, "auth", http(401, {}, err("Invalid API key.", "invalid_api_key"))),
    Case("401 token revoked", KEY, "auth", http(401, {}, err("Token revoked.", "token_revoked"))),
    Case("403 forbidden (JSON)", KEY, "auth", http(403, {}, err("Forbidden: this key may not use it.", 403))),
    Case("403 key limit exceeded", KEY, "billing", http(403, {}, err("Key limit exceeded (daily).", 403))),
    Case("400 out of extra usage", KEY, "billing", http(400, {}, err("You are out of extra usage.", 400))),
    Case("404 not on the free tier", KEY, "billing",
         http(404, {}, err("This model is not available on the free tier.", 404))),
    # -- the route's fault: never bench, next key once, then the next route --------------
    Case("500 server error", ROUTE, "server_error", http(500, {}, err("Internal error.", "server_error"))),
    Case("502 bad gateway", ROUTE, "server_error", http(502, {}, err("Bad gateway.", 502))),
    Case("503 unavailable", ROUTE, "overloaded", http(503, {}, err("Service unavailable.", 503))),
    Case("504 gateway timeout", ROUTE, "server_error", http(504, {}, err("Upstream timed out.", 504))),
    Case("529 overloaded", ROUTE, "overloaded", http(529, {}, err("Overloaded.", "overloaded_error"))),
    Case("429 overloaded (Z.AI)", ROUTE, "overloaded",
         http(429, {}, err("The service may be temporarily overloaded, please try again later.", 1305))),
    Case("429 wrapped upstream (OpenRouter)", ROUTE, "upstream_rate_limit", http(429, {}, WRAPPED_429)),
    Case("403 WAF page in front of the provider", ROUTE, "upstream_blocked",
         http(403, {"Content-Type": "text/html", "Server": "cloudflare"}, WAF_PAGE), hermes_rotates=True,
         why="Hermes 0.19.0 reads any 403 as auth and rotates; a CDN's HTML page is not the provider's "
             "answer about the key (newer Hermes: upstream_blocked, no rotation)"),
    Case("408 request timeout", ROUTE, "timeout", http(408, {}, err("Request timeout.", 408))),
    Case("connection refused", ROUTE, "transport", transport=CONNECT),
    Case("TLS handshake failure", ROUTE, "transport", transport=TLS),
    Case("connection reset", ROUTE, "transport", reset()),
    Case("garbage instead of a status line", ROUTE, "transport", raw(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")),
    Case("no answer (stall)", ROUTE, "timeout", stall(30.0)),
    Case("2xx body cut short", ROUTE, "transport", cut(200, sent=12)),
    # -- the request's fault: the client gets the provider's answer, nothing benched -----
    Case("400 bad request", REQUEST, "format_error",
         http(400, {}, err("messages: field required", "invalid_request_error"))),
    Case("400 context too long", REQUEST, "format_error",
         http(400, {}, err("This model's maximum context length is 8192 tokens.", "context_length_exceeded"))),
    Case("400 content refusal (OpenAI)", REQUEST, "content_policy_blocked",
         http(400, {}, err("Your request was flagged by our moderation: it violates our usage policies."))),
    Case("403 moderation refusal (OpenRouter)", REQUEST, "content_policy_blocked", http(403, {}, MODERATION),
         hermes_rotates=True,
         why="Hermes 0.19.0 does not know OpenRouter's moderation wording and rotates on the 403; the refusal "
             "is about this prompt, so every key would be benched in turn and the client never told why"),
    Case("404 model not found", REQUEST, "model_not_found",
         http(404, {}, err("No such model: anthropic/claude-9", "model_not_found"))),
    Case("413 payload too large", REQUEST, "payload_too_large", http(413, {}, err("Request entity too large."))),
    Case("422 unprocessable", REQUEST, "format_error", http(422, {}, err("Unprocessable entity."))),
    Case("500 unsupported parameter", REQUEST, "format_error",
         http(500, {}, err("Unsupported parameter: 'max_tokens'.", "unsupported_parameter"))),
]
