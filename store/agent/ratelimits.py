"""Rate-limit readings: what a provider says of a key's remaining quota, on every response.

One reader for every dialect in ``spec/ratelimit-headers.md``: OpenAI-style
``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (Groq, Together, ...),
Anthropic's ``anthropic-ratelimit-*`` and its subscription ``unified-<window>`` fields,
OpenRouter's unsuffixed ``x-ratelimit-*``, the IETF ``RateLimit`` / ``RateLimit-Policy``
fields (and the older ``RateLimit-Limit/-Remaining/-Reset``), plus the bodies of
OpenRouter's key endpoint and Codex's usage endpoint that the reopen probe already asks.

Pure functions, the clock passed in. Every number passes :mod:`store.outside` (finite,
bounded); a header that is unknown or does not parse is ignored, never an error. A
relative reset counts from the time read; an absolute one is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from store import outside

# Window lengths, for a reading that carries no reset: it goes stale after one length.
MINUTE = 60.0
LENGTHS = {"5h": 5 * 3600.0, "7d": 7 * 86400.0, "credits": 3600.0, "session": 5 * 3600.0,
           "weekly": 7 * 86400.0}


@dataclass(frozen=True)
class Reading:
    """One window of one key's quota, as one response described it."""

    window: str                      # requests, tokens, input-tokens, output-tokens, 5h, 7d, credits...
    source: str                      # the dialect: openai, anthropic, anthropic-unified, openrouter, ietf, ...
    read_at: float                   # epoch seconds: when the response arrived (local clock)
    limit: float | None = None
    remaining: float | None = None
    utilization: float | None = None  # fraction used, 0..1 (subscription windows)
    reset_at: float | None = None
    length: float | None = None      # the window's length in seconds, when known

    @property
    def left(self) -> float | None:
        """The fraction of the window left, 0..1; None when the reading cannot say."""
        if self.utilization is not None:
            return max(0.0, 1.0 - self.utilization)
        if self.remaining is not None and self.limit:
            return max(0.0, min(1.0, self.remaining / self.limit))
        if self.remaining is not None and self.remaining <= 0:
            return 0.0
        return None

    def stale(self, now: float) -> bool:
        """Past its reset, or (with no reset) older than its window: shown as stale, never as current."""
        if self.reset_at is not None:
            return now >= self.reset_at
        return now - self.read_at > (self.length or MINUTE)

    def exhausted(self, now: float) -> bool:
        """Nothing left until a reset still to come: the next request would get a 429."""
        return not self.stale(now) and self.left == 0.0 and self.reset_at is not None and self.reset_at > now

    def as_json(self) -> dict[str, Any]:
        return {"window": self.window, "source": self.source, "read_at": self.read_at, "limit": self.limit,
                "remaining": self.remaining, "utilization": self.utilization, "reset_at": self.reset_at,
                "length": self.length}

    @classmethod
    def from_json(cls, data: Any, now: float) -> Reading | None:
        """A reading from a sidecar file another process wrote: checked like any outside value."""
        if not isinstance(data, Mapping):
            return None
        window, source = data.get("window"), data.get("source")
        if not (isinstance(window, str) and _NAME.fullmatch(window) and isinstance(source, str)
                and _NAME.fullmatch(source)):
            return None
        read_at = outside.epoch(data.get("read_at"), "read_at", now=now, ahead=60.0)
        if read_at is None:
            return None
        return cls(window, source, read_at,
                   limit=_opt_count(data.get("limit")), remaining=_opt_count(data.get("remaining")),
                   utilization=_opt_fraction(data.get("utilization")),
                   reset_at=_opt_epoch(data.get("reset_at"), now),
                   length=_opt_seconds(data.get("length")))


_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


def _opt_count(v: Any) -> float | None:
    return None if v is None else (None if (c := outside.count(v, "count")) is None else float(c))


def _opt_fraction(v: Any) -> float | None:
    return None if v is None else outside.number(v, "utilization", lo=0.0, hi=1.0)


def _opt_epoch(v: Any, now: float) -> float | None:
    return None if v is None else outside.epoch(v, "reset", now=now)


def _opt_seconds(v: Any) -> float | None:
    return None if v is None else outside.seconds(v, "length")


# --- durations and resets --------------------------------------------------------------------

_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_GO_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:h|ms|us|µs|ns|m|s))+")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def go_duration(text: str) -> float | None:
    """Seconds in a duration as Go prints it (``12ms``, ``6m0s``, ``1h2m3.5s``); None otherwise."""
    raw = text.strip()
    if len(raw) > 40 or not _GO_DURATION.fullmatch(raw):
        return None
    return outside.seconds(sum(float(n) * _UNIT[u] for n, u in _GO_PART.findall(raw)), "duration")


def _relative_or_absolute(raw: str, now: float) -> float | None:
    """A reset given as a duration (``6m0s``), seconds from now (small numbers), epoch
    seconds or milliseconds (large ones), or an RFC 3339 time."""
    d = go_duration(raw)
    if d is not None:
        return now + d
    n = outside.number(raw, "reset", lo=0.0, hi=1e16)
    if n is not None and n < 1e9:
        s = outside.seconds(n, "reset")
        return None if s is None else now + s
    return outside.epoch(raw, "reset", now=now)


# --- the header dialects ---------------------------------------------------------------------

_OPENAI = re.compile(r"x-ratelimit-(limit|remaining|reset)-(requests|tokens(?:_usage_based)?)")
_ANTHROPIC = re.compile(r"anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)")
_UNIFIED = re.compile(r"anthropic-ratelimit-unified-([a-z0-9_]{1,24})-(utilization|reset)")
_OPENROUTER = re.compile(r"x-ratelimit-(limit|remaining|reset)")
_LEGACY_IETF = re.compile(r"ratelimit-(limit|remaining|reset)")


def read_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], now: float) -> list[Reading]:
    """Every reading a response's headers carry, read at *now*. Never raises."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    h: dict[str, str] = {}
    for k, v in items:
        if isinstance(k, str) and isinstance(v, str) and len(v) <= 512:
            h[k.strip().lower()] = v.strip()
    out: list[Reading] = []
    out += _grouped(h, _OPENAI, now, "openai", lambda m: (m.group(2).replace("_usage_based", "-usage"), m.group(1)))
    out += _grouped(h, _ANTHROPIC, now, "anthropic", lambda m: (m.group(1), m.group(2)))
    out += _unified(h, now)
    if not any(r.source == "openai" for r in out):
        out += _grouped(h, _OPENROUTER, now, "openrouter", lambda m: ("requests", m.group(1)))
    out += _ietf(h, now)
    return out


def _grouped(h: dict[str, str], pattern: re.Pattern[str], now: float, source: str, key: Any) -> list[Reading]:
    windows: dict[str, dict[str, str]] = {}
    for name, value in h.items():
        m = pattern.fullmatch(name)
        if m:
            window, part = key(m)
            windows.setdefault(window, {})[part] = value
    out = []
    for window, parts in windows.items():
        limit = _opt_count(parts["limit"]) if "limit" in parts else None
        remaining = _opt_count(parts["remaining"]) if "remaining" in parts else None
        reset = _relative_or_absolute(parts["reset"], now) if "reset" in parts else None
        if remaining is None:       # a limit alone says nothing of what is left
            continue
        out.append(Reading(window, source, now, limit=limit, remaining=remaining, reset_at=reset, length=MINUTE))
    return out


def _unified(h: dict[str, str], now: float) -> list[Reading]:
    windows: dict[str, dict[str, str]] = {}
    for name, value in h.items():
        m = _UNIFIED.fullmatch(name)
        if m:
            windows.setdefault(m.group(1), {})[m.group(2)] = value
    out = []
    for window, parts in windows.items():
        used = _opt_fraction(parts.get("utilization"))
        if used is None:
            continue
        reset = outside.epoch(parts["reset"], "reset", now=now) if "reset" in parts else None
        base = window.split("_", 1)[0]
        out.append(Reading(window, "anthropic-unified", now, utilization=used, reset_at=reset,
                           length=LENGTHS.get(base)))
    status = h.get("anthropic-ratelimit-unified-status", "")
    if status == "rejected" and not any(r.left == 0.0 for r in out):
        reset = outside.epoch(h.get("anthropic-ratelimit-unified-reset"), "reset", now=now)
        if reset is not None:
            out.append(Reading("unified", "anthropic-unified", now, utilization=1.0, reset_at=reset))
    return out


_ITEM = re.compile(r'\s*(?:"([^"]{1,40})"|([A-Za-z0-9_.-]{1,40}))((?:\s*;\s*[a-z]{1,8}=[^;,]{1,40})*)\s*')
_PARAM = re.compile(r";\s*([a-z]{1,8})=([^;,]{1,40})")


def _structured(value: str) -> dict[str, dict[str, str]]:
    """``"name";k=v;k=v, "other";k=v`` as {name: {k: v}}; an item that does not parse is skipped."""
    out: dict[str, dict[str, str]] = {}
    for item in value.split(",")[:8]:
        m = _ITEM.fullmatch(item)
        if m:
            out[m.group(1) or m.group(2)] = {k: v.strip().strip('"') for k, v in _PARAM.findall(m.group(3))}
    return out


def _ietf(h: dict[str, str], now: float) -> list[Reading]:
    out: list[Reading] = []
    if "ratelimit" in h:
        policies = _structured(h.get("ratelimit-policy", ""))
        for name, params in _structured(h["ratelimit"]).items():
            remaining = _opt_count(params["r"]) if "r" in params else None
            if remaining is None:
                continue
            policy = policies.get(name, {})
            limit = _opt_count(policy["q"]) if "q" in policy else None
            length = _opt_seconds(policy["w"]) if "w" in policy else None
            t = outside.seconds(params["t"], "t") if "t" in params else None
            out.append(Reading(name.lower()[:40], "ietf", now, limit=limit, remaining=remaining,
                               reset_at=None if t is None else now + t, length=length or MINUTE))
        return out
    parts = {m.group(1): v for k, v in h.items() if (m := _LEGACY_IETF.fullmatch(k))}
    first = {k: v.split(",")[0].split(";")[0] for k, v in parts.items()}
    remaining = _opt_count(first["remaining"]) if "remaining" in first else None
    if remaining is not None:
        limit = _opt_count(first["limit"]) if "limit" in first else None
        t = outside.seconds(first["reset"], "reset") if "reset" in first else None
        out.append(Reading("requests", "ietf", now, limit=limit, remaining=remaining,
                           reset_at=None if t is None else now + t, length=MINUTE))
    return out


# --- the probe's bodies ----------------------------------------------------------------------

def read_openrouter_key(body: Any, now: float) -> list[Reading]:
    """OpenRouter's ``GET /api/v1/key``: the credits window (no limit: nothing to read)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, Mapping) or data.get("limit") is None:
        return []
    limit = outside.number(data.get("limit"), "data.limit", lo=0.0, hi=float(outside.MAX_COUNT))
    remaining = outside.number(data.get("limit_remaining"), "data.limit_remaining",
                               lo=-float(outside.MAX_COUNT), hi=float(outside.MAX_COUNT))
    if limit is None or remaining is None:
        return []
    return [Reading("credits", "openrouter-key", now, limit=limit, remaining=max(0.0, remaining),
                    length=LENGTHS["credits"])]


def read_codex_usage(body: Any, now: float) -> list[Reading]:
    """Codex's usage endpoint: the session (primary) and weekly (secondary) windows of
    ``rate_limit`` and of each ``additional_rate_limits[]`` entry."""
    if not isinstance(body, Mapping):
        return []
    limits: list[tuple[str, Any]] = [("", body.get("rate_limit"))]
    extra = body.get("additional_rate_limits")
    if isinstance(extra, list):
        for e in extra[:8]:
            if isinstance(e, Mapping):
                name = e.get("limit_name") or e.get("metered_feature")
                tag = name.lower()[:16] if isinstance(name, str) and _NAME.fullmatch(name.lower()[:16]) else "extra"
                limits.append((tag + "-", e.get("rate_limit")))
    out = []
    for prefix, rl in limits:
        if not isinstance(rl, Mapping):
            continue
        for key, window in (("primary_window", "session"), ("secondary_window", "weekly")):
            w = rl.get(key)
            if not isinstance(w, Mapping):
                continue
            used = outside.number(w.get("used_percent"), "used_percent", lo=0.0, hi=100.0)
            if used is None:
                continue
            reset = _opt_epoch(w.get("reset_at"), now)
            if reset is None:
                after = w.get("reset_after_seconds", w.get("resets_in_seconds"))
                s = None if after is None else outside.seconds(after, "reset_after_seconds")
                reset = None if s is None else now + s
            length = _opt_seconds(w.get("limit_window_seconds")) or LENGTHS[window]
            out.append(Reading(prefix + window, "codex-usage", now, utilization=used / 100.0,
                               reset_at=reset, length=length))
    return out


# --- what the console and the selection ask --------------------------------------------------

def tightest(readings: Iterable[Reading], now: float) -> Reading | None:
    """The fresh reading with the least left: it decides the key's headroom."""
    fresh = [r for r in readings if not r.stale(now) and r.left is not None]
    return min(fresh, key=lambda r: (r.left, r.reset_at or 0.0), default=None)


def blocked_until(readings: Iterable[Reading], now: float, threshold: float = 0.0) -> float | None:
    """When a key may be picked again: the latest reset among windows at or under
    *threshold* of their limit left (0: only windows with nothing left). None: usable."""
    times = [r.reset_at for r in readings
             if r.reset_at is not None and r.reset_at > now and not r.stale(now)
             and r.left is not None and r.left <= threshold]
    return max(times, default=None)
