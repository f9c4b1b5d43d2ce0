"""The IETF fields every dialect may carry: ``Retry-After`` (RFC 9110) and the
``RateLimit`` / ``RateLimit-Policy`` fields of draft-ietf-httpapi-ratelimit-headers (and
the older ``RateLimit-Limit`` / ``-Remaining`` / ``-Reset`` trio).

``Retry-After`` is the one reset a provider states for *this* answer: where it is given it
is the bench's reset, whatever a dialect's window headers say (:func:`retry_after`).
Pure functions, the clock passed in; every number through :mod:`store.outside`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from store import outside
from store.dialects.readings import MINUTE, Reading, opt_count, opt_seconds

NAME = "ietf"

_ITEM = re.compile(r'\s*(?:"([^"]{1,40})"|([A-Za-z0-9_.-]{1,40}))((?:\s*;\s*[a-z]{1,8}=[^;,]{1,40})*)\s*')
_PARAM = re.compile(r";\s*([a-z]{1,8})=([^;,]{1,40})")
_LEGACY = re.compile(r"ratelimit-(limit|remaining|reset)")


def retry_after(h: Mapping[str, str], now: float, notice: outside.Notice | None = None) -> float | None:
    """``Retry-After`` (delay-seconds or an HTTP date) as epoch seconds, or None."""
    raw = h.get("retry-after")
    if not raw:
        return None
    s = outside.seconds(raw, "Retry-After")
    if s is not None:
        return now + s
    try:
        when = parsedate_to_datetime(raw[:64]).timestamp()
    except (TypeError, ValueError, OverflowError, IndexError):
        outside.seconds(raw, "Retry-After", notice=notice)   # says why it is ignored
        return None
    return outside.epoch(when, "Retry-After", now=now, notice=notice)


def _structured(value: str) -> dict[str, dict[str, str]]:
    """``"name";k=v;k=v, "other";k=v`` as {name: {k: v}}; an item that does not parse is skipped."""
    out: dict[str, dict[str, str]] = {}
    for item in value.split(",")[:8]:
        m = _ITEM.fullmatch(item)
        if m:
            out[m.group(1) or m.group(2)] = {k: v.strip().strip('"') for k, v in _PARAM.findall(m.group(3))}
    return out


def readings(h: Mapping[str, str], now: float) -> list[Reading]:
    """The ``RateLimit`` fields' windows (or the older trio's one window)."""
    out: list[Reading] = []
    if "ratelimit" in h:
        policies = _structured(h.get("ratelimit-policy", ""))
        for name, params in _structured(h["ratelimit"]).items():
            remaining = opt_count(params["r"]) if "r" in params else None
            if remaining is None:
                continue
            policy = policies.get(name, {})
            limit = opt_count(policy["q"]) if "q" in policy else None
            length = opt_seconds(policy["w"]) if "w" in policy else None
            t = outside.seconds(params["t"], "t") if "t" in params else None
            out.append(Reading(name.lower()[:40], NAME, now, limit=limit, remaining=remaining,
                               reset_at=None if t is None else now + t, length=length or MINUTE))
        return out
    parts = {m.group(1): v for k, v in h.items() if (m := _LEGACY.fullmatch(k))}
    first = {k: v.split(",")[0].split(";")[0] for k, v in parts.items()}
    remaining = opt_count(first["remaining"]) if "remaining" in first else None
    if remaining is not None:
        limit = opt_count(first["limit"]) if "limit" in first else None
        t = outside.seconds(first["reset"], "reset") if "reset" in first else None
        out.append(Reading("requests", NAME, now, limit=limit, remaining=remaining,
                           reset_at=None if t is None else now + t, length=MINUTE))
    return out
