"""What the fake provider answers: scripted replies, quotas and probe-endpoint answers.

The state model behind :class:`tui.demo.fake_provider.FakeProvider`, kept apart from the
HTTP server so the rules (which reply comes next, when a quota trips and reopens,
what the usage and key endpoints say) read on their own. :class:`ProviderScript` is
thread-safe: the server's handler threads call its answer methods (``_chat``,
``_usage_answer``...) and it decides.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tui.demo.fake_usage import Spend

# The rate-limit header dialects a quota can announce on every answer (spec/ratelimit-headers.md).
DIALECTS = ("openai", "anthropic", "anthropic-unified")


@dataclass
class Reply:
    """One scripted answer to a chat request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str | None = None
    error_code: str | None = None
    message: str | None = None

    def body(self, model: str) -> dict[str, Any]:
        if self.status < 300:
            return {
                "id": "chatcmpl-" + secrets.token_hex(6), "object": "chat.completion",
                "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok (fake provider)"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        return {"error": {"message": self.message or f"HTTP {self.status}",
                          "type": self.error_type or "error", "code": self.error_code}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        return cls(int(data.get("status", 200)), dict(data.get("headers") or {}),
                   data.get("error_type"), data.get("error_code"), data.get("message"))


# Ready-made replies.
def ok() -> Reply:
    return Reply(200)


def rate_limited(*, retry_after: float | None = None, reset_at: float | None = None,
                 usage_limit: bool = False) -> Reply:
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    if reset_at is not None:
        headers["x-ratelimit-reset"] = str(int(reset_at * 1000))   # epoch ms, as OpenRouter
    if usage_limit:
        return Reply(429, headers, "usage_limit_reached", "usage_limit_reached",
                     "The usage limit has been reached for your plan.")
    return Reply(429, headers, "rate_limit_exceeded", "rate_limit_exceeded",
                 "Rate limit reached; slow down.")


def billing() -> Reply:
    return Reply(402, {}, "insufficient_credits", "insufficient_credits",
                 "Insufficient credits: add more to continue.")


def unauthorized(reason: str = "invalid_api_key") -> Reply:
    return Reply(401, {}, reason, reason, f"Unauthorized ({reason}).")


def server_error(status: int = 500) -> Reply:
    return Reply(status, {}, "server_error", "server_error", f"Upstream error {status}.")


@dataclass
class Quota:
    """A request quota: *limit* requests per window, then 429 until *resets_at*.

    *reopens_at* (earlier) makes it reopen early; *lie* makes the usage endpoint report
    plenty left while chat still answers 429. *dialect* (opt-in, one of :data:`DIALECTS`)
    makes every chat answer, 2xx and 429 alike, say what is left in that provider's
    rate-limit headers (:meth:`headers`).
    """

    limit: int
    window: float = 3600.0
    resets_at: float | None = None
    reopens_at: float | None = None
    lie: bool = False
    usage_limit: bool = False
    used: int = 0
    dialect: str | None = None

    def headers(self, now: float) -> dict[str, str]:
        """What is left, as *dialect* says it: requests (and tokens, 1,000 a request) or the
        subscription's 5h utilisation, with the window's reset."""
        left = max(0, self.limit - self.used)
        reset = self.resets_at if self.resets_at is not None else now + self.window
        if self.dialect == "openai":
            span = _go_duration(max(0.0, reset - now))
            return {"x-ratelimit-limit-requests": str(self.limit), "x-ratelimit-remaining-requests": str(left),
                    "x-ratelimit-reset-requests": span, "x-ratelimit-limit-tokens": str(self.limit * 1000),
                    "x-ratelimit-remaining-tokens": str(left * 1000), "x-ratelimit-reset-tokens": span}
        if self.dialect == "anthropic":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(reset))
            out = {}
            for window, scale in (("requests", 1), ("tokens", 1000)):
                out.update({f"anthropic-ratelimit-{window}-limit": str(self.limit * scale),
                            f"anthropic-ratelimit-{window}-remaining": str(left * scale),
                            f"anthropic-ratelimit-{window}-reset": stamp})
            return out
        if self.dialect == "anthropic-unified":
            return {"anthropic-ratelimit-unified-status": "allowed" if left else "rejected",
                    "anthropic-ratelimit-unified-5h-utilization": f"{min(1.0, self.used / max(1, self.limit)):.2f}",
                    "anthropic-ratelimit-unified-5h-reset": str(int(reset)),
                    "anthropic-ratelimit-unified-reset": str(int(reset))}
        return {}

    def exhausted(self, now: float) -> bool:
        if self.resets_at is not None and now >= self.resets_at:
            self.used, self.resets_at = 0, None
        if self.reopens_at is not None and now >= self.reopens_at:
            self.used, self.resets_at, self.reopens_at = 0, None, None
        return self.used >= self.limit

    def used_percent(self, now: float) -> float:
        if self.lie:
            return 10.0
        return 100.0 if self.exhausted(now) else 100.0 * self.used / max(1, self.limit)


class ProviderScript:
    """The script per API key and the request log. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Reply]] = {}
        self._quotas: dict[str, Quota] = {}
        self._usage: dict[str, tuple[int, Any]] = {}
        self._keyinfo: dict[str, tuple[int, Any]] = {}
        self._oauth: dict[str, tuple[int, dict[str, Any]]] = {}
        self.spend: Spend | None = None     # every answer reports its usage (tui.demo.fake_usage)
        self._delays: dict[str, float] = {}
        self.log: list[tuple[str, str, str | None, int]] = []   # (method, path, key, status)
        self.arrivals: list[str] = []    # paths as requests arrive (before any delay)

    # -- script --

    def script(self, key: str, *replies: Reply) -> None:
        """Answer chat requests for *key* with *replies* in order; the last one repeats."""
        with self._lock:
            self._scripts[key] = list(replies) or [ok()]

    def quota(self, key: str, quota: Quota) -> None:
        with self._lock:
            self._quotas[key] = quota

    def usage(self, key: str, used_percent: float | None = None, *, status: int = 200,
              secondary: float | None = None, additional: list[float] | None = None) -> None:
        """What the Codex usage endpoint says for *key*."""
        body: Any = None
        if status == 200:
            rl: dict[str, Any] = {"primary_window": {"used_percent": used_percent or 0.0}}
            if secondary is not None:
                rl["secondary_window"] = {"used_percent": secondary}
            body = {"rate_limit": rl, "additional_rate_limits": [
                {"rate_limit": {"primary_window": {"used_percent": a}}} for a in additional or []]}
        with self._lock:
            self._usage[key] = (status, body)

    def key_info(self, key: str, *, limit: float | None, limit_remaining: float | None,
                 status: int = 200) -> None:
        """What OpenRouter's ``/api/v1/key`` says for *key*."""
        body = {"data": {"label": "fake", "limit": limit, "limit_remaining": limit_remaining,
                         "usage": 0}} if status == 200 else None
        with self._lock:
            self._keyinfo[key] = (status, body)

    def oauth(self, refresh_token: str, *, access_token: str | None = None,
              new_refresh: str | None = None, expires_in: int = 3600,
              error: str | None = None, status: int = 200) -> None:
        """How the token endpoint answers a refresh with *refresh_token*."""
        if error:
            answer: dict[str, Any] = {"error": error, "error_description": f"{error} (fake)"}
            status = 400 if status == 200 else status
        else:
            answer = {"access_token": access_token or "at-" + secrets.token_hex(12),
                      "refresh_token": new_refresh or "rt-" + secrets.token_hex(12),
                      "expires_in": expires_in, "token_type": "Bearer"}
        with self._lock:
            self._oauth[refresh_token] = (status, answer)

    def delay(self, path_part: str, seconds: float) -> None:
        """Answer requests whose path contains *path_part* after *seconds*."""
        with self._lock:
            self._delays[path_part] = seconds

    def wait_for_request(self, path_part: str, timeout: float = 5.0) -> bool:
        """Wait (bounded) until a request whose path contains *path_part* has arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if any(path_part in p for p in self.arrivals):
                    return True
            time.sleep(0.01)
        return False

    def requests_to(self, path_part: str) -> int:
        with self._lock:
            return sum(1 for _m, p, _k, _s in self.log if path_part in p)

    # -- answers (called from handler threads) --

    def _chat(self, key: str | None) -> Reply:
        now = self.clock()
        with self._lock:
            q = self._quotas.get(key or "")
            if q is not None:
                if q.exhausted(now):
                    if q.resets_at is None:
                        q.resets_at = now + q.window
                    reply = rate_limited(reset_at=q.resets_at, usage_limit=q.usage_limit)
                    return _announced(reply, q, now)
                q.used += 1
                if q.used >= q.limit and q.resets_at is None:
                    q.resets_at = now + q.window
            replies = self._scripts.get(key or "")
            if not replies:
                reply = ok()
            else:
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
            return _announced(reply, q, now) if q is not None else reply

    def _usage_answer(self, key: str | None) -> tuple[int, Any]:
        now = self.clock()
        with self._lock:
            if key in self._usage:
                return self._usage[key]
            q = self._quotas.get(key or "")
            if q is not None:
                return 200, {"rate_limit": {"primary_window": {"used_percent": q.used_percent(now)}},
                             "additional_rate_limits": []}
        return 200, {"rate_limit": {"primary_window": {"used_percent": 0.0}}}

    def _key_answer(self, key: str | None) -> tuple[int, Any]:
        now = self.clock()
        with self._lock:
            if key in self._keyinfo:
                return self._keyinfo[key]
            q = self._quotas.get(key or "")
            if q is not None:
                if q.lie:
                    left = q.limit        # "plenty left", whatever chat says
                else:
                    left = 0 if q.exhausted(now) else q.limit - q.used
                return 200, {"data": {"limit": q.limit, "limit_remaining": left, "usage": q.used}}
        return 200, {"data": {"limit": None, "limit_remaining": None, "usage": 0}}

    def _token_answer(self, refresh_token: str | None) -> tuple[int, Any]:
        with self._lock:
            if refresh_token and refresh_token in self._oauth:
                return self._oauth[refresh_token]
        return 400, {"error": "invalid_grant", "error_description": "unknown refresh token"}

    def _delay_for(self, path: str) -> float:
        with self._lock:
            self.arrivals.append(path)
            return max((s for part, s in self._delays.items() if part in path), default=0.0)

    def _record(self, method: str, path: str, key: str | None, status: int) -> None:
        with self._lock:
            self.log.append((method, path, key, status))


def _announced(reply: Reply, quota: Quota, now: float) -> Reply:
    """*reply* with what *quota* says is left, in its dialect (a copy: scripts are shared)."""
    extra = quota.headers(now)
    return replace(reply, headers={**reply.headers, **extra}) if extra else reply


def _go_duration(seconds: float) -> str:
    """Seconds as Go prints a duration (``6m0s``, ``29.5s``), as OpenAI's headers do."""
    minutes, secs = divmod(round(seconds, 3), 60)
    return f"{int(minutes)}m{secs:g}s" if minutes else f"{secs:g}s"


def load_script(provider: ProviderScript, data: dict[str, Any], now: float | None = None) -> None:
    """Apply a JSON script. Times given as ``in`` (seconds from now) or ``at`` (epoch)::

        {"keys": {"KEY": [{"status": 429, "headers": {...}}, {"status": 200}]},
         "quotas": {"KEY": {"limit": 5, "window": 20, "reopens_in": 8, "lie": false,
                            "dialect": "openai"}},
         "usage": {"KEY": {"used_percent": 40}},
         "key_info": {"KEY": {"limit": 10, "limit_remaining": 3}},
         "oauth": {"REFRESH": {"access_token": "...", "expires_in": 3600}},
         "spend": {"input": 1200, "cached": 800, "output": 300, "cost": 0.0125}}

    ``spend`` (tui.demo.fake_usage.Spend) makes every answer report its usage in its dialect.
    """
    now = time.time() if now is None else now
    for key, replies in (data.get("keys") or {}).items():
        provider.script(key, *(Reply.from_json(r) for r in replies))
    for key, q in (data.get("quotas") or {}).items():
        provider.quota(key, Quota(
            limit=int(q.get("limit", 5)), window=float(q.get("window", 3600)),
            reopens_at=now + float(q["reopens_in"]) if q.get("reopens_in") is not None else None,
            lie=bool(q.get("lie")), usage_limit=bool(q.get("usage_limit")),
            dialect=q.get("dialect") if q.get("dialect") in DIALECTS else None))
    for key, u in (data.get("usage") or {}).items():
        provider.usage(key, u.get("used_percent"), status=int(u.get("status", 200)))
    for key, k in (data.get("key_info") or {}).items():
        provider.key_info(key, limit=k.get("limit"), limit_remaining=k.get("limit_remaining"),
                          status=int(k.get("status", 200)))
    if isinstance(data.get("spend"), dict):
        provider.spend = Spend.from_json(data["spend"])
    for rt, o in (data.get("oauth") or {}).items():
        provider.oauth(rt, access_token=o.get("access_token"), new_refresh=o.get("refresh_token"),
                       expires_in=int(o.get("expires_in", 3600)), error=o.get("error"))
