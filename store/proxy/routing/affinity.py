"""A conversation's name, so its turns can keep to the key whose prompt cache is warm (#30).

A provider's prompt cache is per key: a conversation whose turns land on different keys
pays full price and full latency for its whole context every turn. The proxy names each
request's conversation with the first of these it finds:

1. the client's own marker: ``prompt_cache_key`` (OpenAI Chat Completions and Responses),
   ``metadata.user_id`` (Anthropic Messages, as Claude Code sends it: it carries the
   session), the Codex CLI's ``session_id`` header (older versions: ``conversation_id``),
   or an ``x-session-affinity`` header any client may send;
2. else a digest of the system prompt and the first user message (Chat Completions:
   the leading ``system``/``developer`` messages; Messages: ``system``; Responses:
   ``instructions``), which every turn of one conversation repeats.

The name is a keyed SHA-256 digest (a per-process salt): the marker and the prompt are
never stored in clear, never logged, and a digest means nothing outside this process.
The body is the one the door already read (bounded by its cap); it is parsed only when a
pool with affinity asks (:attr:`Conversation.digest`, once), and a body that is not JSON,
too deep or of the wrong shape names no conversation: it never raises.

Parsing costs about 1 ms per 100 KB on the event loop, so a body over :data:`PARSE_CAP` is
read in part (:func:`partial_doc`): its top-level values up to the message list, that list
only up to its first user message, and the top-level keys after it (a marker, Anthropic's
``system``), each parsed from its last occurrence to the end, which parses only when that
occurrence is a top-level key. The long-cache ask is then a byte search for ``"ttl": "1h"``.

:attr:`Conversation.long` says the request asks for Anthropic's 1-hour cache
(``cache_control: {type: ephemeral, ttl: "1h"}`` anywhere in ``system``, ``messages`` or
``tools``): its pin then lasts ``long_ttl``. Pure; no IO.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from typing import Any

from store.dialects.dialect import ANTHROPIC, RESPONSES

# Headers a client names its conversation by, in the order they are looked for.
CODEX_HEADERS = ("session_id", "conversation_id")
AFFINITY_HEADER = "x-session-affinity"
PARSE_CAP = 64 * 1024      # a body up to this size is parsed whole, a longer one in part
MARKER_CAP = 4096          # a marker longer than this is cut before hashing (it still names)
WALK_BUDGET = 20_000       # JSON nodes looked at for a 1-hour cache_control, at most
_SALT = secrets.token_bytes(16)
# Which marker or part named the conversation (tests and the docs read these).
PROMPT_CACHE_KEY, USER_ID, PROMPT = "prompt_cache_key", "metadata.user_id", "prompt"


def _digest(kind: str, *parts: bytes) -> bytes:
    h = hashlib.sha256(_SALT)
    h.update(kind.encode())
    for p in parts:
        h.update(len(p).to_bytes(8, "big"))
        h.update(p)
    return h.digest()[:16]


def _text(value: Any) -> bytes | None:
    """A marker's bytes (a non-empty string), or None."""
    if isinstance(value, str) and value.strip():
        return value.encode("utf-8", "surrogatepass")[:MARKER_CAP]
    return None


def _canon(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def _first_user(items: Any) -> Any:
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        return None
    for m in items:
        if isinstance(m, dict) and m.get("role") == "user":
            return m.get("content")
    return None


def _system(protocol: str, doc: dict[str, Any]) -> Any:
    if protocol == ANTHROPIC:
        return doc.get("system")
    if protocol == RESPONSES:
        return doc.get("instructions")
    msgs = doc.get("messages")
    lead = []
    for m in msgs if isinstance(msgs, list) else ():
        if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
            break
        lead.append(m.get("content"))
    return lead


def name(protocol: str, doc: Any, headers: Mapping[str, str] | None = None) -> tuple[bytes, str] | None:
    """The conversation's digest and what named it, from a parsed body *doc* and the
    request's *headers* (case-insensitive); None: nothing names it (no first user message)."""
    body = doc if isinstance(doc, dict) else {}
    if (v := _text(body.get("prompt_cache_key"))) is not None:
        return _digest("m", PROMPT_CACHE_KEY.encode(), v), PROMPT_CACHE_KEY
    meta = body.get("metadata")
    if isinstance(meta, dict) and (v := _text(meta.get("user_id"))) is not None:
        return _digest("m", USER_ID.encode(), v), USER_ID
    for header in (*CODEX_HEADERS, AFFINITY_HEADER):
        if headers is not None and (v := _text(headers.get(header))) is not None:
            return _digest("m", header.encode(), v), header
    first = _first_user(body.get("input") if protocol == RESPONSES else body.get("messages"))
    if first is None:
        return None
    return _digest("p", protocol.encode(), _canon(_system(protocol, body)), _canon(first)), PROMPT


def asks_long_cache(doc: Any) -> bool:
    """Whether the request asks for Anthropic's 1-hour cache: a ``cache_control`` of
    ``{type: ephemeral, ttl: "1h"}`` in its ``system``, ``messages`` or ``tools`` (at most
    :data:`WALK_BUDGET` nodes looked at)."""
    if not isinstance(doc, dict):
        return False
    stack = [doc.get(k) for k in ("system", "messages", "tools")]
    budget = WALK_BUDGET
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        if isinstance(node, dict):
            cc = node.get("cache_control")
            if isinstance(cc, dict) and cc.get("type") == "ephemeral" and cc.get("ttl") == "1h":
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


_DEC = json.JSONDecoder()


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _head(text: str, listing: str) -> dict[str, Any] | None:
    """The top-level values of the object in *text* before *listing*, and *listing*'s list
    only up to its first user message (its whole value when it is no list); None: malformed."""
    seen: dict[str, Any] = {}
    i = _ws(text, 0)
    if text[i:i + 1] != "{":
        return None
    i = _ws(text, i + 1)
    while text[i:i + 1] == '"':
        key, i = _DEC.raw_decode(text, i)
        i = _ws(text, i)
        if text[i:i + 1] != ":":
            return None
        i = _ws(text, i + 1)
        if key == listing and text[i:i + 1] == "[":
            items: list[Any] = []
            i = _ws(text, i + 1)
            while text[i:i + 1] not in ("]", ""):
                item, i = _DEC.raw_decode(text, i)
                items.append(item)
                if isinstance(item, dict) and item.get("role") == "user":
                    break
                i = _ws(text, i)
                i = _ws(text, i + 1) if text[i:i + 1] == "," else i
            seen[listing] = items
            return seen
        seen[key], i = _DEC.raw_decode(text, i)
        i = _ws(text, i)
        if text[i:i + 1] != ",":
            return seen
        i = _ws(text, i + 1)
    return seen


def _tail(text: str, key: str) -> dict[str, Any] | None:
    """The top-level keys from *key* to the end, when *key*'s last occurrence as a key is a
    top-level one (a nested one leaves a bracket over, and does not parse); else None."""
    at = text.rfind(f'"{key}":')
    if at < 0:
        return None
    try:
        got = json.loads("{" + text[at:])
    except (ValueError, RecursionError):
        return None
    return got if isinstance(got, dict) else None


def partial_doc(protocol: str, body: bytes) -> dict[str, Any] | None:
    """What :func:`name` reads of a large body, without parsing its whole message list."""
    text = body.decode("utf-8")
    listing = "input" if protocol == RESPONSES else "messages"
    doc = _head(text, listing)
    if doc is None:
        return None
    for key in ("prompt_cache_key", "metadata", "system" if protocol == ANTHROPIC else "instructions"):
        if key not in doc and (tail := _tail(text, key)) is not None:
            doc[key] = tail[key]
    return doc


class Conversation:
    """One request's conversation, worked out on first use (the body parsed at most once)."""

    __slots__ = ("protocol", "_body", "_headers", "_done", "_digest", "_source", "_long", "prefer")

    def __init__(self, protocol: str, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.protocol = protocol
        self._body = body
        self._headers = headers
        self._done = False
        self._digest: bytes | None = None
        self._source: str | None = None
        self._long = False
        self.prefer: tuple[str, str] | None = None   # (pool, row id) its pin named at the last pick

    def _work_out(self) -> None:
        self._done = True
        doc: Any = None
        body, big = self._body, len(self._body) > PARSE_CAP
        try:
            if body[:1] in (b"{", b" ", b"\n", b"\r", b"\t"):
                doc = partial_doc(self.protocol, body) if big else json.loads(body)
        except (ValueError, RecursionError):
            doc = None
        try:
            named = name(self.protocol, doc, self._headers)
            self._long = b'"1h"' in body and ((b'"ttl":"1h"' in body or b'"ttl": "1h"' in body) if big else
                                               asks_long_cache(doc))
        except (ValueError, RecursionError, TypeError):    # a hostile shape names nothing
            named = None
        self._body = b""          # nothing of the request is kept once named
        self._headers = None
        if named is not None:
            self._digest, self._source = named

    @property
    def digest(self) -> bytes | None:
        """The conversation's name (16 bytes of a keyed SHA-256), None when nothing names it."""
        if not self._done:
            self._work_out()
        return self._digest

    @property
    def source(self) -> str | None:
        """What named it: a marker's name, or ``prompt`` (the digest of its opening)."""
        if not self._done:
            self._work_out()
        return self._source

    @property
    def long(self) -> bool:
        """Whether it asks for Anthropic's 1-hour cache."""
        if not self._done:
            self._work_out()
        return self._long
