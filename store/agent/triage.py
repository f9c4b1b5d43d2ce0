"""429 triage (#30): is a key's limit a *rate limit* that passes in moments, or a *spent
quota* that no wait within a request will clear? One function decides
(:func:`triage`), called once per answer by :func:`store.agent.judge.judge`; the verdict
carries its answer (``Verdict.triage``, ``Verdict.wait``) to every consumer.

A **spent quota** (:data:`QUOTA`) benches the key and rotates at once, with no same-key
retry:

- a billing fault (402, ``insufficient_quota``, a credit balance, ...);
- a rate limit in a usage or plan limit's words (``usage_limit_reached``, ``quota exceeded``);
- Anthropic's subscription status ``rejected`` (``anthropic-ratelimit-unified-status``);
- a long window (5 h, 7 d, credits: at least :data:`LONG_WINDOW`) read at zero, or any
  window at zero whose reset is further than :data:`LONG_RESET`;
- a reset the provider gives further than :data:`LONG_RESET` away.

A **rate limit** (:data:`RATE_LIMIT`) is every other key's 429: per-minute or per-request
windows, a short ``retry-after``, Anthropic's unified status still ``allowed``. Its
``wait`` is the seconds to the provider's own reset (None: it did not say); the proxy
paces a pinned conversation on the same key when that wait is within
``proxy.pace.max_wait`` (:func:`may_pace`), and otherwise rotates, the bench lasting as
long as the provider said.

Pure: the clock is passed in; nothing is read but the result and the readings given.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.agent.outcomes import KEY, Result, is_usage_limit
from store.dialects.readings import Reading

RATE_LIMIT = "rate_limit"
QUOTA = "quota"

LONG_WINDOW = 3600.0    # a window this long at zero is a quota, not a per-minute limit
LONG_RESET = 600.0      # a reset further than this is a spent quota's
_LONG_NAMES = ("5h", "7d", "session", "weekly", "credits", "unified")
UNIFIED_STATUS = "anthropic-ratelimit-unified-status"


def triage(result: Result, fault: str | None, kind: str, readings: Sequence[Reading], reset: float | None,
           now: float) -> tuple[str | None, float | None]:
    """(:data:`RATE_LIMIT`, :data:`QUOTA` or None, the seconds to the provider's reset or
    None) for a judged answer: its *fault* and *kind* (:func:`store.agent.outcomes.classify`),
    its *readings*, and *reset*: the provider's reset time as it said it (epoch seconds,
    not floored; None: not said). None for anything that is not a key's limit."""
    if fault != KEY or kind not in ("rate_limit", "billing"):
        return None, None
    wait = max(0.0, reset - now) if reset is not None else None
    if kind == "billing" or is_usage_limit(result):
        return QUOTA, wait
    status = _header(result, UNIFIED_STATUS)
    if status == "rejected":
        return QUOTA, wait
    if status is not None and status.startswith("allowed"):   # the subscription has room: a burst
        return RATE_LIMIT, wait
    for r in readings:
        if r.left == 0.0 and _long(r, now):
            return QUOTA, wait
    if wait is not None and wait > LONG_RESET:
        return QUOTA, wait
    return RATE_LIMIT, wait


def may_pace(kind: str | None, wait: float | None, max_wait: float) -> bool:
    """Whether a limit triaged as *kind* with *wait* may be waited out on the same key
    within *max_wait* seconds (0: pacing off)."""
    return kind == RATE_LIMIT and wait is not None and max_wait > 0 and wait <= max_wait


def _long(r: Reading, now: float) -> bool:
    if r.length is not None and r.length >= LONG_WINDOW:
        return True
    if r.window.split("_", 1)[0] in _LONG_NAMES:
        return True
    return r.reset_at is not None and r.reset_at - now > LONG_RESET


def _header(result: Result, name: str) -> str | None:
    headers = result.headers or {}
    value = headers.get(name)
    if value is None and hasattr(headers, "items"):
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value.strip().lower() if isinstance(value, str) else None
