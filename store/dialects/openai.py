"""The OpenAI-style family: OpenAI, OpenRouter, Groq, DeepSeek, Nous, Gemini's shim and
every OpenAI-compatible ``custom:`` endpoint.

- auth: ``Authorization: Bearer``; base path: the base holds ``/v1``;
- limits: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (OpenAI, Groq,
  Together...), OpenRouter's unsuffixed ``x-ratelimit-*``; resets as a Go duration
  (``6m0s``), seconds, or epoch seconds/milliseconds;
- usage: ``usage.prompt_tokens`` / ``completion_tokens`` and their details (cached, reasoning),
  Responses' ``input_tokens`` / ``output_tokens``, OpenRouter's ``usage.cost`` (streams:
  :mod:`store.dialects.streams`);
- OpenRouter's key endpoint body (the reopen probe's credits window).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from store import outside
from store.dialects.dialect import Dialect
from store.dialects.readings import LENGTHS, Reading, Usage, go_duration, grouped, usage_of

_SUFFIXED = re.compile(r"x-ratelimit-(limit|remaining|reset)-(requests|tokens(?:_usage_based)?)")
_UNSUFFIXED = re.compile(r"x-ratelimit-(limit|remaining|reset)")
_RESETS = ("x-ratelimit-reset", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")


def readings(h: Mapping[str, str], now: float) -> list[Reading]:
    """The OpenAI-style windows; OpenRouter's unsuffixed ones only where no suffixed one is."""
    out = grouped(h, _SUFFIXED, now, "openai", lambda m: (m.group(2).replace("_usage_based", "-usage"), m.group(1)))
    if not out:
        out = grouped(h, _UNSUFFIXED, now, "openrouter", lambda m: ("requests", m.group(1)))
    return out


def reset(h: Mapping[str, str], now: float, notice: outside.Notice | None = None) -> float | None:
    """``x-ratelimit-reset`` (epoch s/ms, or seconds from now when small), then
    ``-requests`` / ``-tokens`` (``6m0s``)."""
    for name in _RESETS:
        raw = h.get(name)
        if raw:
            t = _one_reset(name, raw, now, notice)
            if t is not None:
                return t
    return None


def _one_reset(name: str, raw: str, now: float, notice: outside.Notice | None) -> float | None:
    value = outside.number(raw, name, lo=-math.inf, hi=math.inf)
    if value is None:
        seconds = go_duration(raw[:64])
        if seconds is not None:
            s = outside.seconds(seconds, name, notice=notice)
            return None if s is None else now + s
        return outside.epoch(raw, name, now=now, notice=notice)
    if value > 1e9:     # large: epoch s or ms; small: seconds from now
        return outside.epoch(value, name, now=now, notice=notice)
    s = outside.seconds(value, name, notice=notice)
    return None if s is None or s <= 0 else now + s


def usage(data: Any, notice: outside.Notice | None = None) -> Usage | None:
    """The usage of a JSON answer (every shape: :func:`store.dialects.readings.usage_block`)."""
    return usage_of(data, notice=notice)


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


DIALECT = Dialect("openai", readings=readings, reset=reset, usage=usage)
AGGREGATOR = Dialect("openai", readings=readings, reset=reset, usage=usage, aggregator=True)
