"""What every dialect reads an answer into: rate-limit :class:`Reading` values, the
:class:`Usage` an answer reports, and the time formats providers write a reset in.

Pure values and functions, the clock passed in. Every number passes :mod:`store.outside`
(finite, bounded); a value that does not parse is ignored, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any

from store import outside
from store.durations import GO_UNITS, seconds_in
from store.frozen import quick_init

# Window lengths, for a reading that carries no reset: it goes stale after one length.
MINUTE = 60.0
LENGTHS = {"5h": 5 * 3600.0, "7d": 7 * 86400.0, "credits": 3600.0, "session": 5 * 3600.0,
           "weekly": 7 * 86400.0}
NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")


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
        if not (isinstance(window, str) and NAME.fullmatch(window) and isinstance(source, str)
                and NAME.fullmatch(source)):
            return None
        read_at = outside.epoch(data.get("read_at"), "read_at", now=now, ahead=60.0)
        if read_at is None:
            return None
        return cls(window, source, read_at,
                   limit=opt_count(data.get("limit")), remaining=opt_count(data.get("remaining")),
                   utilization=opt_fraction(data.get("utilization")),
                   reset_at=opt_epoch(data.get("reset_at"), now),
                   length=opt_seconds(data.get("length")))


@quick_init
@dataclass(frozen=True)
class Usage:
    """The tokens one answer says it spent (None: the answer did not say), and the cost its
    provider reports (OpenRouter's ``usage.cost``, USD). ``input_tokens`` counts every input
    token, cached ones included (as OpenAI and genai-prices count them: Anthropic's
    ``input_tokens`` plus its cache reads and writes); ``reasoning_tokens`` are part of
    ``output_tokens``."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def total(self) -> int | None:
        parts = [t for t in (self.input_tokens, self.output_tokens) if t is not None]
        return sum(parts) if parts else None

    def then(self, later: Usage | None) -> Usage:
        """This usage with what a *later* report of the same answer says (a stream's events:
        Anthropic's ``message_delta`` after its ``message_start``): its known fields win."""
        if later is None:
            return self
        return Usage(*(b if b is not None else a for a, b in zip(astuple(self), astuple(later), strict=True)))


MAX_COST = 1e6           # USD for one answer: more is absurd
# (our field, their path in a ``usage`` object); the first path found wins.
_PATHS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("input_tokens", ("prompt_tokens", "input_tokens")),
    ("output_tokens", ("completion_tokens", "output_tokens")),
    ("cache_read_tokens", ("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens",
                           "cache_read_input_tokens")),
    ("cache_write_tokens", ("prompt_tokens_details.cache_write_tokens", "cache_creation_input_tokens")),
    ("reasoning_tokens", ("completion_tokens_details.reasoning_tokens", "output_tokens_details.reasoning_tokens")),
)


# The same paths split once (not on every answer): (our field, ((path, its parts or None), ...)).
_SPLIT: tuple[tuple[str, tuple[tuple[str, tuple[str, ...] | None], ...]], ...] = tuple(
    (ours, tuple((p, tuple(p.split(".")) if "." in p else None) for p in paths)) for ours, paths in _PATHS)


def _at(block: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    node: Any = block
    for part in parts:
        if type(node) is not dict and (node is None or not isinstance(node, Mapping)):   # no ABC check
            return None                                                  # for a JSON object or a gap
        node = node.get(part)
    return node


def usage_block(block: Any, notice: outside.Notice | None = None) -> Usage | None:
    """The :class:`Usage` of one ``usage`` object in any of the three shapes (Chat
    Completions, Responses, Anthropic Messages); None when it names no field. A hostile
    value (negative, non-finite, absurd, not a number) is dropped, said through *notice*."""
    if type(block) is not dict and not isinstance(block, Mapping):      # a JSON object: no ABC check
        return None
    got: dict[str, Any] = {}
    for ours, paths in _SPLIT:
        for path, parts in paths:
            if parts is None:
                v = block.get(path)
            elif len(parts) == 2:        # a gap or a JSON object: no call
                node = block.get(parts[0])
                v = None if node is None else node.get(parts[1]) if type(node) is dict else _at(block, parts)
            else:
                v = _at(block, parts)
            if v is None:
                continue
            if type(v) is not int or not 0 <= v <= outside.MAX_COUNT:   # the common case costs no parse
                v = outside.count(v, "usage." + path, notice=notice)
            if v is not None:
                got[ours] = v
            break
    cost = block.get("cost")
    if cost is not None:
        c = outside.number(cost, "usage.cost", lo=0.0, hi=MAX_COST, notice=notice)
        if c is not None:
            got["cost_usd"] = c
    if not got:
        return None
    if "cache_read_input_tokens" in block or "cache_creation_input_tokens" in block:
        # Anthropic counts its cache apart from input_tokens: ours counts every input token.
        cached = got.get("cache_read_tokens", 0) + got.get("cache_write_tokens", 0)
        if cached and "input_tokens" in got:
            got["input_tokens"] = min(outside.MAX_COUNT, got["input_tokens"] + cached)
    return Usage(**got)


def usage_of(data: Any, fields: Mapping[str, str] | None = None, notice: outside.Notice | None = None) -> Usage | None:
    """The :class:`Usage` in a JSON answer's ``usage`` object (:func:`usage_block`); *fields*
    is kept for callers that named a dialect's fields (every shape is read)."""
    block = data.get("usage") if type(data) is dict or isinstance(data, Mapping) else None   # dict: no ABC check
    return usage_block(block, notice)


def opt_count(v: Any) -> float | None:
    return None if v is None else (None if (c := outside.count(v, "count")) is None else float(c))


def opt_fraction(v: Any) -> float | None:
    return None if v is None else outside.number(v, "utilization", lo=0.0, hi=1.0)


def opt_epoch(v: Any, now: float) -> float | None:
    return None if v is None else outside.epoch(v, "reset", now=now)


def opt_seconds(v: Any) -> float | None:
    return None if v is None else outside.seconds(v, "length")


# --- durations and resets --------------------------------------------------------------------

def go_duration(text: str) -> float | None:
    """Seconds in a duration as Go prints it (``12ms``, ``6m0s``, ``1h2m3.5s``); None otherwise
    (read by the one duration reader, :func:`store.durations.seconds_in`, then bounded)."""
    d = seconds_in(text, GO_UNITS)
    return None if d is None else outside.seconds(d, "duration")


def relative_or_absolute(raw: str, now: float) -> float | None:
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


def lowered(headers: Mapping[str, str] | Any) -> dict[str, str]:
    """*headers* (a mapping or pairs) as lower-cased names to stripped values, long values dropped."""
    items = headers.items() if isinstance(headers, Mapping) or hasattr(headers, "items") else headers
    h: dict[str, str] = {}
    for k, v in items:
        if isinstance(k, str) and isinstance(v, str) and len(v) <= 512:
            h[k.strip().lower()] = v.strip()
    return h


def grouped(h: Mapping[str, str], pattern: re.Pattern[str], now: float, source: str, key: Any) -> list[Reading]:
    """Readings from headers named ``<window>`` x ``limit|remaining|reset`` by *pattern*
    (*key* maps a match to (window, part))."""
    windows: dict[str, dict[str, str]] = {}
    for name, value in h.items():
        m = pattern.fullmatch(name)
        if m:
            window, part = key(m)
            windows.setdefault(window, {})[part] = value
    out = []
    for window, parts in windows.items():
        limit = opt_count(parts["limit"]) if "limit" in parts else None
        remaining = opt_count(parts["remaining"]) if "remaining" in parts else None
        reset = relative_or_absolute(parts["reset"], now) if "reset" in parts else None
        if remaining is None:       # a limit alone says nothing of what is left
            continue
        out.append(Reading(window, source, now, limit=limit, remaining=remaining, reset_at=reset, length=MINUTE))
    return out
