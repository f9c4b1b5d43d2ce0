"""Which protocol a client path speaks, and which routes of the chain speak it.

Three protocols, each a set of paths:

- ``openai``: Chat Completions and its siblings (``/v1/chat/completions``,
  ``/v1/completions``, ``/v1/embeddings``, ``GET /v1/models``), served by every route, as
  before;
- ``anthropic``: Anthropic Messages (``/v1/messages``, ``/v1/messages/count_tokens``),
  served by the ``anthropic`` pool and by ``custom:`` entries Hermes itself would talk
  Anthropic to (``api_mode``/``transport: anthropic_messages`` in ``custom_providers``, or a
  base URL Hermes's ``_detect_api_mode_for_url`` maps to it: ``api.anthropic.com``, a path
  ending ``/anthropic``, ``api.kimi.com/coding``);
- ``responses``: OpenAI Responses (``/v1/responses``), served by the providers the dialect
  table says speak it (``openai-api``, ``openrouter``, ``openai-codex``, ``xai``...:
  :data:`store.dialects.registry.PROVIDERS`), and by ``custom:`` entries marked
  ``codex_responses`` or on ``api.openai.com``.

The protocol is not the pool: a request is only ever sent to a route that speaks its
protocol (no translation), and a route that does not is skipped without moving the chain.

:class:`Want` is what a request asks of the chain: its protocol and, lazily, its model (the
body is parsed only when a pool holds a per-model bench, so the fast path pays nothing).
Pure data and functions; no IO.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from types import EllipsisType
from typing import Any
from urllib.parse import urlsplit

from store.dialects import registry
from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES

PATHS: dict[str, tuple[str, ...]] = {
    OPENAI: ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models"),
    ANTHROPIC: ("/v1/messages", "/v1/messages/count_tokens"),
    RESPONSES: ("/v1/responses",),
}
PROTOCOL_OF: dict[str, str] = {path: proto for proto, paths in PATHS.items() for path in paths}
TITLES = {OPENAI: "OpenAI Chat Completions", ANTHROPIC: "Anthropic Messages", RESPONSES: "OpenAI Responses"}

_EVERY = registry.CHAT
_ANTHROPIC_ONLY = frozenset({ANTHROPIC})
_WITH_RESPONSES = registry.WITH_RESPONSES


def _host(url: str | None) -> str:
    try:
        return (urlsplit(url or "").hostname or "").lower()
    except ValueError:
        return ""


def detected_mode(base_url: str | None) -> str | None:
    """Hermes's ``_detect_api_mode_for_url``: the protocol a base URL implies, if any."""
    host = _host(base_url)
    if host in ("api.openai.com", "api.x.ai"):
        return RESPONSES
    if host == "api.anthropic.com":
        return ANTHROPIC
    try:
        path = urlsplit((base_url or "").strip().lower().rstrip("/")).path.rstrip("/")
    except ValueError:
        return None
    if path.endswith(("/anthropic", "/anthropic/v1")):
        return ANTHROPIC
    if host == "api.kimi.com" and "/coding" in (base_url or "").lower():
        return ANTHROPIC
    return None


def configured_mode(entry: Mapping[str, Any] | None) -> str | None:
    """A ``custom_providers`` entry's ``api_mode`` (or ``transport``) as a protocol."""
    if not entry:
        return None
    raw = entry.get("api_mode") or entry.get("transport")
    mode = raw.strip().lower() if isinstance(raw, str) else ""
    return {"anthropic_messages": ANTHROPIC, "codex_responses": RESPONSES,
            "chat_completions": OPENAI}.get(mode)


def route_protocols(pool: str | None, provider: str | None, base_url: str | None,
                    custom_providers: Iterable[Mapping[str, Any]] = ()) -> frozenset[str]:
    """The protocols a route (its pool, provider and base URL) speaks."""
    name = (pool or provider or "").strip().lower()
    known = registry.protocols(name)
    if known is not None and name != "custom":
        return known
    if not name.startswith("custom"):
        return _EVERY
    entry = next((cp for cp in custom_providers if cp.get("pool_key") == name), None) \
        if name.startswith("custom:") else None
    url = base_url or (str(entry.get("base_url") or "") if entry else None)
    mode = configured_mode(entry) or detected_mode(url)
    if mode == ANTHROPIC:
        return _ANTHROPIC_ONLY
    if mode == RESPONSES:
        return _WITH_RESPONSES
    return _EVERY


def served_paths(protocols: Iterable[str]) -> list[str]:
    """Every path of *protocols*, in a fixed order (for the status file)."""
    have = set(protocols)
    return [p for proto in (OPENAI, ANTHROPIC, RESPONSES) if proto in have for p in PATHS[proto]]


class Want:
    """What one request asks of the chain: its protocol, its endpoint scope
    (:func:`store.agent.judge.endpoint_of`), and its model when a pool must know it (parsed
    from the body once, on first use)."""

    __slots__ = ("protocol", "endpoint", "_body", "_model", "_parsed", "conversation")

    def __init__(self, protocol: str, body: bytes = b"", encoded: bool = False, endpoint: str | None = None,
                 model: str | None | EllipsisType = ...) -> None:
        self.protocol = protocol
        self.endpoint = endpoint      # COUNT_TOKENS, or None: limited with the model's own requests
        self._body = b"" if encoded else body
        # *model*: what model_of read of the body already (the door's check), else read on first use
        self._parsed = model is not ...
        self._model: str | None = None if encoded or model is ... else model
        self.conversation: Any = None   # its conversation, for affinity (store.proxy.routing.affinity)

    @property
    def model(self) -> str | None:
        """The ``model`` of the request body (None: not JSON, or none named)."""
        if not self._parsed:
            self._parsed = True
            self._model = model_of(self._body)
        return self._model


_DECODE = json.JSONDecoder().decode


def model_of(body: bytes) -> str | None:
    """The ``model`` a JSON request body names, or None. What ``json.loads(body)`` reads: a
    body opening with ``{`` or a space and no NUL second byte is UTF-8 to it (its encoding
    sniff), so such a body is decoded as ``json.loads`` would and parsed without the sniff."""
    if not body or body[:1] not in (b"{", b" ", b"\n", b"\r", b"\t"):
        return None
    try:
        data = _DECODE(body.decode("utf-8", "surrogatepass")) if body[1:2] != b"\x00" else json.loads(body)
    except (ValueError, RecursionError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None
