"""A scripted upstream with a per-key rate-limit window in real time, for the pacing and
hold tests: a key limited for *seconds* answers 429 with ``retry-after`` (the whole
seconds left, rounded up) from its first request until the window has passed, then 200.
A key given a spent quota answers ``insufficient_quota`` every time."""

from __future__ import annotations

import math
import time

from tests.proxy.upstream import Behaviour, ScriptedUpstream, http

RATE_BODY = {"error": {"message": "Rate limit reached for requests per min (RPM)", "type": "requests",
                       "code": "rate_limit_exceeded"}}
QUOTA_BODY = {"error": {"message": "You exceeded your current quota, please check your plan and billing details",
                        "type": "insufficient_quota", "code": "insufficient_quota"}}


class WindowedUpstream(ScriptedUpstream):
    """:class:`ScriptedUpstream` whose keys may be rate-limited by the clock."""

    def __init__(self) -> None:
        super().__init__()
        self.windows: dict[str, float] = {}        # key -> window length (s)
        self.opened: dict[str, float] = {}         # key -> monotonic time of its first request
        self.spent: dict[str, Behaviour] = {}
        self.shape: dict[str, tuple[dict[str, str], object]] = {}   # key -> its 429's extra headers, body

    def limit(self, key: str, seconds: float, headers: dict[str, str] | None = None, body: object = None) -> None:
        with self._lock:
            self.windows[key] = seconds
            self.shape[key] = (headers or {}, body or RATE_BODY)

    def quota(self, key: str, answer: Behaviour | None = None) -> None:
        with self._lock:
            self.spent[key] = answer or http(429, {}, QUOTA_BODY)

    def _next(self, key: str | None) -> Behaviour:
        now = time.monotonic()
        with self._lock:
            if key in self.spent:
                return self.spent[key]
            length = self.windows.get(key or "")
            if length is not None:
                start = self.opened.setdefault(key or "", now)
                left = start + length - now
                if left > 0:
                    extra, body = self.shape[key or ""]
                    return http(429, {"retry-after": str(max(1, math.ceil(left))), **extra}, body)
        return super()._next(key)
