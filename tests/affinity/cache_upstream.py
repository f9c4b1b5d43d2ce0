"""A scripted upstream that models a provider's prompt cache per key, for the affinity tests
and ``bench/bench_affinity.py``.

It answers OpenAI Chat Completions (``.../chat/completions``), OpenAI Responses
(``.../responses``) and Anthropic Messages (``.../messages``) on loopback, and models what
the real providers do with a conversation's turns:

- **a prompt cache per key**: each answer caches the request's whole prompt (system part,
  then every message) under the key that served it, for ``ttl`` seconds. A turn is a *hit*
  when the conversation's previous turn (its prompt less the last answer and the new
  message, holding a user message) was served by the same key within the TTL. The longest
  cached prefix (a turn from longer ago counts in part) is reported as the providers do:
  ``usage.prompt_tokens_details.cached_tokens`` (Chat Completions),
  ``usage.input_tokens_details.cached_tokens`` (Responses), ``usage.cache_read_input_tokens``
  (Messages, where ``input_tokens`` counts only the uncached part);
- **a per-key rate limit**: at most ``limit`` requests per key in any ``window`` seconds
  (the providers' per-minute limits, scaled); past it a 429 with ``retry-after`` (whole
  seconds until the window has room) in the protocol's own error shape.

Tokens are counted as characters / 4. Every answer is recorded (:attr:`CacheUpstream.log`:
key, path, status, whether it hit). Runs on its own event loop in a daemon thread; every
wait is bounded.

    with CacheUpstream(ttl=300, limit=20, window=60) as up:
        ... point rows' base_url at up.url + "/v1" ...
        up.hit_ratio(), up.served_by_key()
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Turn:
    """One answer of the upstream."""

    key: str
    path: str
    status: int
    hit: bool = False
    prompt_tokens: int = 0
    cached_tokens: int = 0


def _tokens(n_chars: int) -> int:
    return max(1, n_chars // 4)


def _key_of(request: web.Request) -> str:
    auth = request.headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return request.headers.get("x-api-key", "").strip()


def _listed(value: Any) -> list[Any]:
    """A body's list of turns (a client's odd value, a string or a bool, is one part or none)."""
    return value if isinstance(value, list) else [] if value in (None, False, "") else [value]


def _parts(path: str, doc: dict[str, Any]) -> list[Any]:
    """The prompt as a list of parts, in the order a provider caches them."""
    if path.endswith("/messages"):
        return [doc.get("tools"), doc.get("system"), *_listed(doc.get("messages"))]
    if path.endswith("/responses"):
        return [doc.get("tools"), doc.get("instructions"), *_listed(doc.get("input"))]
    return [doc.get("tools"), *_listed(doc.get("messages"))]


def _prefixes(parts: list[Any]) -> list[tuple[bytes, int]]:
    """(rolling hash, characters so far) after each part."""
    h = hashlib.sha256()
    out, chars = [], 0
    for p in parts:
        raw = json.dumps(p, sort_keys=True, separators=(",", ":"))
        h.update(raw.encode())
        chars += len(raw)
        out.append((h.copy().digest(), chars))
    return out


class CacheUpstream:
    """The upstream; see the module docstring."""

    def __init__(self, *, ttl: float = 300.0, limit: int | None = None, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic, host: str = "127.0.0.1") -> None:
        self.ttl = ttl
        self.limit = limit
        self.window = window
        self.clock = clock
        self.host = host
        self.port = 0
        self.log: list[Turn] = []
        self.spent: set[str] = set()      # keys whose quota is spent: 429 with a long retry-after
        self._cache: dict[str, dict[bytes, float]] = {}    # key -> prompt prefix hash -> expires
        self._sent: dict[str, deque[float]] = {}           # key -> times of its answers in the window
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> CacheUpstream:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="cache-upstream", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(20)
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._loop is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(20)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        app.router.add_route("GET", "/{tail:.*}", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]   # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- what it saw --

    def turns(self, *, ok_only: bool = True) -> list[Turn]:
        with self._lock:
            return [t for t in self.log if t.status == 200 or not ok_only]

    def hit_ratio(self) -> float:
        """Hits over answered turns (200s)."""
        ok = self.turns()
        return sum(t.hit for t in ok) / len(ok) if ok else 0.0

    def cached_share(self) -> float:
        """Prompt tokens read from the cache over all prompt tokens (answered turns)."""
        ok = self.turns()
        total = sum(t.prompt_tokens for t in ok)
        return sum(t.cached_tokens for t in ok) / total if total else 0.0

    def served_by_key(self) -> Counter[str]:
        return Counter(t.key for t in self.turns())

    def rate_limited(self) -> int:
        return sum(1 for t in self.turns(ok_only=False) if t.status == 429)

    def reset(self) -> None:
        """Forget the log, the caches and the windows (a new run on the same server)."""
        with self._lock:
            self.log.clear()
            self._cache.clear()
            self._sent.clear()

    # -- answers --

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    async def _handle(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        key = _key_of(request)
        try:
            doc = json.loads(await request.read())
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            return self._error(path, 400, "invalid_request_error", "the body is not a JSON object", key)
        now = self.clock()
        with self._lock:
            if key in self.spent:
                self.log.append(Turn(key, path, 429))
                return self._error(path, 429, "insufficient_quota", "You exceeded your current quota", key,
                                   {"retry-after": "3600"})
            sent = self._sent.setdefault(key, deque())
            while sent and sent[0] <= now - self.window:
                sent.popleft()
            if self.limit is not None and len(sent) >= self.limit:
                wait = max(1, math.ceil(sent[0] + self.window - now))
                self.log.append(Turn(key, path, 429))
                return self._error(path, 429, "rate_limit_error", "rate limit: requests per minute", key,
                                   {"retry-after": str(wait)})
            sent.append(now)
            cache = self._cache.setdefault(key, {})
            prefixes = _prefixes(_parts(path, doc))
            cached = 0
            for digest, chars in prefixes[:-1]:          # the longest proper prefix cached under this key
                if cache.get(digest, -math.inf) > now:
                    cached = chars
            parts = _parts(path, doc)
            hit = len(parts) >= 3 and any(isinstance(m, dict) and m.get("role") == "user" for m in parts[:-2]) \
                and cache.get(prefixes[-3][0], -math.inf) > now
            for digest, _chars in prefixes:
                cache[digest] = now + self.ttl
            total = prefixes[-1][1] if prefixes else 0
            turn = Turn(key, path, 200, hit, _tokens(total), _tokens(cached) if cached else 0)
            self.log.append(turn)
        return web.json_response(self._answer(path, doc, turn))

    def _answer(self, path: str, doc: dict[str, Any], turn: Turn) -> dict[str, Any]:
        text = f"answer {len(self.log)}"
        model = str(doc.get("model") or "m")
        out = 5
        if path.endswith("/messages"):
            return {"id": f"msg_{len(self.log)}", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": turn.prompt_tokens - turn.cached_tokens, "output_tokens": out,
                              "cache_read_input_tokens": turn.cached_tokens,
                              "cache_creation_input_tokens": turn.prompt_tokens - turn.cached_tokens}}
        if path.endswith("/responses"):
            return {"id": f"resp_{len(self.log)}", "object": "response", "created_at": int(time.time()),
                    "model": model, "status": "completed", "parallel_tool_calls": False, "tool_choice": "auto",
                    "tools": [], "output": [{"type": "message", "id": f"m_{len(self.log)}", "status": "completed",
                                             "role": "assistant",
                                             "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                    "usage": {"input_tokens": turn.prompt_tokens, "output_tokens": out,
                              "total_tokens": turn.prompt_tokens + out,
                              "input_tokens_details": {"cached_tokens": turn.cached_tokens},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
        return {"id": f"chatcmpl-{len(self.log)}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": turn.prompt_tokens, "completion_tokens": out,
                          "total_tokens": turn.prompt_tokens + out,
                          "prompt_tokens_details": {"cached_tokens": turn.cached_tokens}}}

    def _error(self, path: str, status: int, kind: str, message: str, key: str,
               headers: dict[str, str] | None = None) -> web.Response:
        if path.endswith("/messages"):
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            body = {"error": {"message": message, "type": kind, "code": kind}}
        return web.json_response(body, status=status, headers=headers)
