"""What goes over the wire: upstream base URLs, headers kept or dropped, error bodies,
and reading a provider's error answer into the agent's :class:`~store.agent.outcomes.Result`."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from yarl import URL

from store.agent.outcomes import Result

DEFAULT_BASES = {
    "openrouter": "https://openrouter.ai/api/v1",
    "openai": "https://api.openai.com/v1",
    "openai-codex": "https://chatgpt.com/backend-api/codex",
    "anthropic": "https://api.anthropic.com/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "nous": "https://inference-api.nousresearch.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
}
# Never forwarded either way: hop-by-hop, the client's credentials, what we recompute.
DROP_REQUEST = frozenset({"authorization", "host", "content-length", "connection", "keep-alive",
                           "transfer-encoding", "te", "upgrade", "proxy-authorization",
                           "proxy-connection", "accept-encoding", "cookie", "x-api-key"})
DROP_RESPONSE = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding",
                            "date", "server", "set-cookie"})
H_POOL, H_CRED, H_FALLBACK, H_ROUTE = ("X-Hermes-Pool", "X-Hermes-Credential", "X-Hermes-Fallback",
                                       "X-Hermes-Route")


class UpstreamUrls:
    """Upstream URLs parsed once per row base and path, not per request (a query string
    is parsed each time and not kept, so the cache stays bounded by rows x paths)."""

    def __init__(self, cap: int = 256) -> None:
        self.cap = cap
        self._urls: dict[str, URL] = {}

    def get(self, base: str, tail: str) -> URL:
        text = base + tail
        url = self._urls.get(text)
        if url is None:
            url = URL(text)
            if "?" not in tail:
                if len(self._urls) >= self.cap:
                    self._urls.clear()
                self._urls[text] = url
        return url


def error_body(status: int, message: str, kind: str, **extra: Any) -> web.Response:
    """An OpenAI-shaped JSON error."""
    err = {"message": message, "type": kind, "code": status, **extra}
    return web.json_response({"error": err}, status=status)


def with_model(body: bytes, model: str) -> bytes:
    """The request with the fallback entry's model in place of the client's."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    data["model"] = model
    return json.dumps(data).encode()


def result_of(status: int, headers: Any, raw: bytes) -> Result:
    """What the agent's rules need from an error answer: status, headers, reason, message."""
    reason = message = reset_at = None
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        code, kind = err.get("code"), err.get("type")
        reason = str(code) if isinstance(code, str) and code else (str(kind) if kind else None)
        message = str(err.get("message") or "") or None
        meta = err.get("metadata")
        reset_at = meta.get("reset_at") if isinstance(meta, dict) else None
    elif isinstance(err, str):
        message = err
    return Result(status, dict(headers), reason, message, reset_at)
