"""A request's outcome as an agent sees it, and when the provider says the limit resets.

The vocabulary shared by :mod:`store.agent.pool_client` and :mod:`store.agent.runtime`: the
:class:`Result` of one request, the :class:`Selection` it was sent with, the
:class:`Decision` on what to do next (action words below) and the :class:`Notice` an
agent shows its user. :func:`reset_time` reads the provider's reset time from the body,
``Retry-After``, the ``x-ratelimit-reset*`` headers or the message (spec section 6, "Errors").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from store.model import parse_epoch
from store.redaction.fingerprints import fingerprint

SERVER_ERRORS = frozenset({500, 502, 503, 504, 529})

# Action words of a Decision.
OK = "ok"              # the request succeeded
RETRY = "retry"        # send it again with the same row (first 429, or token refreshed)
ROTATED = "rotated"    # the row was benched; use the next row of the same pool
FALLBACK = "fallback"  # the pool is out; use the next entry of the fallback chain
OUT = "out"            # nothing left anywhere
FAILED = "failed"      # the request failed for a reason no rotation fixes (e.g. 400)

_USAGE_LIMIT = re.compile(
    r"usage.?limit|plan.?limit|insufficient.?quota|quota.?exceeded|exceeded your.*quota|"
    r"monthly limit|weekly limit|daily limit", re.IGNORECASE)
_RETRY_IN_MESSAGE = re.compile(r"retry\s+(?:after\s+|in\s+)?(\d+(?:\.\d+)?)\s*(?:s\b|sec|seconds)",
                               re.IGNORECASE)
_RESETS_IN = re.compile(r"resets?\s+in\s+(?:(\d+)\s*h(?:ou)?rs?\s*)?(?:(\d+)\s*min(?:ute)?s?)?",
                        re.IGNORECASE)
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?"
                       r"(?:(\d+(?:\.\d+)?)ms)?$")


@dataclass(frozen=True)
class Result:
    """One request's result as the agent saw it."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None       # provider error code/type, e.g. "token_revoked"
    message: str | None = None      # provider error message
    reset_at: Any = None            # provider-declared reset (s, ms or ISO)

    @classmethod
    def success(cls) -> Result:
        return cls(200)


@dataclass(frozen=True)
class Selection:
    """The row to send a request with. The secret stays in memory and out of repr."""

    pool: str
    row_id: str
    label: str
    token: str = field(repr=False)
    base_url: str | None = None
    model: str | None = None

    @property
    def fingerprint(self) -> str | None:
        return fingerprint(self.token)


@dataclass(frozen=True)
class Decision:
    action: str
    selection: Selection | None = None
    note: str | None = None


@dataclass(frozen=True)
class Notice:
    """Something the agent would tell its user (restores, fallbacks)."""

    at: float
    kind: str      # restore | fallback | restore_failed | restore_check_failed
    text: str


def is_usage_limit(result: Result) -> bool:
    """A usage or plan limit: retrying the same key will not clear it."""
    text = f"{result.reason or ''} {result.message or ''}"
    return bool(_USAGE_LIMIT.search(text))


def failure_reason(code: int) -> str | None:
    """The ``failure_reason`` a credential is benched with for HTTP *code* (spec section 6),
    or None when the code is not the credential's problem (the caller's answer stands)."""
    if code == 429:
        return "rate_limit"
    if code == 402:
        return "billing"
    if code in (401, 403):
        return "auth"
    if code in SERVER_ERRORS or 500 <= code < 600:
        return "server_error"
    return None


def _duration_seconds(text: str) -> float | None:
    m = _DURATION.match(text.strip().lower())
    if not m or not any(m.groups()):
        return None
    h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


def reset_time(result: Result, now: float) -> float | None:
    """The provider's reset time as epoch seconds, from the body, the headers or the message.

    ``Retry-After`` (seconds or HTTP date), ``x-ratelimit-reset`` (epoch s/ms, or seconds
    from now when small), ``x-ratelimit-reset-requests``/``-tokens`` (``6m0s``), then
    "retry after N seconds" / "resets in 4hr 5min" in the message.
    """
    explicit = parse_epoch(result.reset_at)
    if explicit is not None:
        return explicit
    headers = {str(k).lower(): str(v) for k, v in (result.headers or {}).items()}
    ra = headers.get("retry-after")
    if ra:
        try:
            return now + max(0.0, float(ra))
        except ValueError:
            try:
                return parsedate_to_datetime(ra).timestamp()
            except (TypeError, ValueError):
                pass
    for name in ("x-ratelimit-reset", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        raw = headers.get(name)
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            seconds = _duration_seconds(raw)
            if seconds is not None:
                return now + seconds
            iso = parse_epoch(raw)
            if iso is not None:
                return iso
            continue
        if math.isfinite(value) and value > 0:
            # Small numbers are "seconds from now"; large ones are epoch s or ms.
            return parse_epoch(value) if value > 1e9 else now + value
    msg = result.message or ""
    m = _RETRY_IN_MESSAGE.search(msg)
    if m:
        return now + float(m.group(1))
    m = _RESETS_IN.search(msg)
    if m and (m.group(1) or m.group(2)):
        return now + int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60
    return None
