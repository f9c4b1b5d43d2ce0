"""Reopen probes: ask a provider whether a benched credential's quota came back early.

Three pieces, all usable without a UI:

- probes per provider (`register_probe`): the Codex usage probe of spec section 6 and
  an OpenRouter key probe; each answers a :class:`Verdict` (reopened, limited, unknown);
- a :class:`VerdictCache` (300 s per token) whose slot is reserved *before* the request,
  so concurrent callers wait for one HTTP request instead of stampeding (it and
  :class:`Verdict` live in :mod:`store.agent.verdicts` and are re-exported here);
- :func:`lift_reopened_cooldowns`: probe first (no lock held), then one transaction that
  re-reads the pool and clears elapsed cooldowns and probe-confirmed reopenings.

No network call ever happens while ``auth.lock`` is held. Probes use stdlib urllib with a
short timeout, so the runtime gains no dependency. Tokens never leave this module except
in the Authorization header; verdict reasons never contain them.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from store.agent.verdicts import LIMITED, PROBE_TIMEOUT, REOPENED, UNKNOWN, VERDICT_TTL, Verdict, VerdictCache
from store.authfile import read_store
from store.dialects.codex import read_codex_usage
from store.dialects.openai import read_openrouter_key
from store.envfile import read_env
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import STATUS_EXHAUSTED, Row, ensure_pool, pool_rows
from store.paths import Home
from store.pools import policy
from store.transaction import skip_write, transaction

__all__ = [
    "CODEX_DEFAULT_BASE", "DEFAULT_CACHE", "LIMITED", "OPENROUTER_DEFAULT_BASE", "PROBE_TIMEOUT", "REOPENED",
    "UNKNOWN", "VERDICT_TTL", "LiftResult", "Probe", "ProbeFn", "Verdict", "VerdictCache", "VerdictFn",
    "codex_probe", "codex_usage_url", "default_verdict_fn", "home_env", "http_get_json",
    "lift_reopened_cooldowns", "openrouter_key_url", "openrouter_probe", "probe_for", "rate_limit_shaped",
    "register_probe", "row_secret", "unregister_probe", "worst_used_percent",
]

CODEX_DEFAULT_BASE = "https://chatgpt.com/backend-api"
OPENROUTER_DEFAULT_BASE = "https://openrouter.ai/api/v1"

_RATE_LIMIT_WORDS = re.compile(r"rate.?limit|usage.?limit|quota|too many requests", re.IGNORECASE)


# A probe gets the row (for base_url and kind), the live secret and a timeout.
ProbeFn = Callable[[Row, str, float], Verdict]


@dataclass(frozen=True)
class Probe:
    provider: str
    fn: ProbeFn
    # Which benched rows this probe can say something about.
    eligible: Callable[[Row], bool]


_REGISTRY: dict[str, Probe] = {}
_REGISTRY_LOCK = threading.Lock()


def rate_limit_shaped(row: Row) -> bool:
    """Exhausted with a 429, or with a reason/message about rate limits, usage or quota."""
    if row.get("last_status") != STATUS_EXHAUSTED:
        return False
    if row.get("last_error_code") == 429:
        return True
    text = f"{row.get('last_error_reason') or ''} {row.get('last_error_message') or ''}"
    return bool(_RATE_LIMIT_WORDS.search(text))


def register_probe(provider: str, fn: ProbeFn, eligible: Callable[[Row], bool] | None = None) -> None:
    """Register (or replace) the reopen probe for pool *provider*."""
    with _REGISTRY_LOCK:
        _REGISTRY[provider] = Probe(provider, fn, eligible or rate_limit_shaped)


def unregister_probe(provider: str) -> None:
    with _REGISTRY_LOCK:
        _REGISTRY.pop(provider, None)


def probe_for(pool: str) -> Probe | None:
    """The probe registered for *pool*, if any."""
    with _REGISTRY_LOCK:
        return _REGISTRY.get(pool)


# --- HTTP -----------------------------------------------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: urllib would resend the Authorization header to wherever
    the Location points (another host included) and we would trust that host's answer.
    The 3xx comes back as the status, which every probe reads as unknown."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def http_get_json(url: str, token: str, timeout: float) -> tuple[int, Any]:
    """GET *url* with a bearer token, at that origin only (no redirects); return
    (status, parsed JSON or None; None for an undecodable body).

    HTTP error statuses (3xx included) are returned, not raised; network failures raise OSError.
    """
    req = urllib.request.Request(url, method="GET", headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json",
        "User-Agent": "hermes-admin-probe",
    })
    try:
        with _OPENER.open(req, timeout=timeout) as resp:  # noqa: S310 (http(s) only)
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read() or b""
    try:
        body = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        body = None
    return status, body


def _now() -> float:
    return time.time()


# --- Codex ----------------------------------------------------------------------------------

def codex_usage_url(base_url: str | None) -> str:
    """``<base>/wham/usage`` for a ChatGPT backend base, else ``<base>/api/codex/usage``."""
    base = (base_url or CODEX_DEFAULT_BASE).rstrip("/")
    if "/backend-api" in base:
        return base + "/wham/usage"
    return base + "/api/codex/usage"


def worst_used_percent(body: Any) -> float | None:
    """Highest ``used_percent`` over the primary/secondary windows of ``rate_limit`` and of
    every ``additional_rate_limits[].rate_limit``; None when the body has no window."""
    if not isinstance(body, dict):
        return None
    limits = [body.get("rate_limit")]
    extra = body.get("additional_rate_limits")
    if isinstance(extra, list):
        limits += [e.get("rate_limit") for e in extra if isinstance(e, dict)]
    worst: float | None = None
    for rl in limits:
        if not isinstance(rl, dict):
            continue
        for name in ("primary_window", "secondary_window"):
            window = rl.get(name)
            if not isinstance(window, dict):
                continue
            value = window.get("used_percent")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            worst = float(value) if worst is None else max(worst, float(value))
    return worst


def codex_probe(row: Row, token: str, timeout: float = PROBE_TIMEOUT) -> Verdict:
    """Spec section 6: 200 -> reopened iff the worst window is below 100 %; 429 -> limited;
    anything else or an exception -> unknown with the reason."""
    now = _now()
    url = codex_usage_url(row.get("inference_base_url") or row.get("base_url"))
    try:
        status, body = http_get_json(url, token, timeout)
    except Exception as exc:
        return Verdict(UNKNOWN, f"usage endpoint unreachable: {type(exc).__name__}", now)
    if status == 429:
        return Verdict(LIMITED, "usage endpoint answered 429", now)
    if status != 200:
        return Verdict(UNKNOWN, f"usage endpoint answered HTTP {status}", now)
    worst = worst_used_percent(body)
    readings = tuple(read_codex_usage(body, now))
    if worst is None:
        return Verdict(UNKNOWN, "usage response has no rate-limit windows", now, readings)
    if worst < 100:
        return Verdict(REOPENED, f"worst window {worst:g}% used", now, readings)
    return Verdict(LIMITED, f"worst window {worst:g}% used", now, readings)


# --- OpenRouter -----------------------------------------------------------------------------

def openrouter_key_url(base_url: str | None) -> str:
    """``GET /api/v1/key`` under the row's base URL (default openrouter.ai)."""
    base = (base_url or OPENROUTER_DEFAULT_BASE).rstrip("/")
    if not base.endswith("/api/v1"):
        base = base.rsplit("/api/v1", 1)[0] + "/api/v1" if "/api/v1" in base else base + "/api/v1"
    return base + "/key"


def openrouter_probe(row: Row, token: str, timeout: float = PROBE_TIMEOUT) -> Verdict:
    """Reopened when the key has limit left: ``limit_remaining > 0``, or no limit at all."""
    now = _now()
    try:
        status, body = http_get_json(openrouter_key_url(row.get("base_url")), token, timeout)
    except Exception as exc:
        return Verdict(UNKNOWN, f"key endpoint unreachable: {type(exc).__name__}", now)
    if status == 429:
        return Verdict(LIMITED, "key endpoint answered 429", now)
    if status != 200:
        return Verdict(UNKNOWN, f"key endpoint answered HTTP {status}", now)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or "limit" not in data:
        return Verdict(UNKNOWN, "key response has no data.limit", now)
    if data.get("limit") is None:
        return Verdict(REOPENED, "key has no spending limit", now)
    remaining = data.get("limit_remaining")
    readings = tuple(read_openrouter_key(body, now))
    if isinstance(remaining, (int, float)) and not isinstance(remaining, bool):
        if remaining > 0:
            return Verdict(REOPENED, f"limit remaining {remaining:g}", now, readings)
        return Verdict(LIMITED, f"limit remaining {remaining:g}", now, readings)
    return Verdict(UNKNOWN, "key response has no limit_remaining", now)


def _openrouter_eligible(row: Row) -> bool:
    # A key over its spending limit answers 402 as well as 429.
    return rate_limit_shaped(row) or (
        row.get("last_status") == STATUS_EXHAUSTED and row.get("last_error_code") == 402)


register_probe("openai-codex", codex_probe)
register_probe("openrouter", openrouter_probe, _openrouter_eligible)


DEFAULT_CACHE = VerdictCache()


# --- secrets of borrowed rows ---------------------------------------------------------------

def row_secret(row: Row, env: Mapping[str, str] | None = None) -> str | None:
    """The live secret of *row*: its stored token, else its ``env:VAR`` source's value."""
    token = row.get("access_token")
    if isinstance(token, str) and token:
        return token
    source = str(row.get("source") or "")
    if source.startswith("env:"):
        name = source[4:]
        value = (env or {}).get(name) or os.environ.get(name)
        if value:
            return value
    return None


def home_env(home: Home) -> dict[str, str]:
    """``<home>/.env`` values (empty when it cannot be read: a probe then says unknown)."""
    return dict(read_env(home))


# --- probing rows ---------------------------------------------------------------------------

VerdictFn = Callable[[str, Row], Verdict]


def default_verdict_fn(env: Mapping[str, str] | None = None, cache: VerdictCache | None = None,
                       timeout: float = PROBE_TIMEOUT) -> VerdictFn:
    """A ``verdict_fn(pool, row)`` using the registry, the cache and *env* for borrowed rows."""
    cache = cache if cache is not None else DEFAULT_CACHE

    def verdict(pool: str, row: Row) -> Verdict:
        probe = probe_for(pool)
        now = cache.clock()
        if probe is None:
            return Verdict(UNKNOWN, f"no reopen probe for pool {pool}", now)
        if row.get("last_status") == policy.DEAD:
            return Verdict(LIMITED, "dead: only a reset or a new token clears it", now)
        if not probe.eligible(row):
            return Verdict(UNKNOWN, "not benched for a rate or usage limit", now)
        token = row_secret(row, env)
        if not token:
            return Verdict(UNKNOWN, "no secret available (borrowed source not set)", now)
        return cache.get(token, lambda: probe.fn(row, token, timeout))

    return verdict


@dataclass
class LiftResult:
    """What :func:`lift_reopened_cooldowns` found and did."""

    pool: str
    verdicts: dict[str, Verdict]          # row id -> verdict (probed rows only)
    cleared_elapsed: list[str]            # row ids whose cooldown had simply run out
    cleared_reopened: list[str]           # row ids a probe said reopened
    available: bool                       # any usable row after the change
    wrote: bool


def lift_reopened_cooldowns(
    home: Home, pool: str, verdict_fn: VerdictFn | None = None, now: float | None = None, *,
    ttls: policy.Ttls = policy.DEFAULT_TTLS, targets: set[str] | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT, clock: Callable[[], float] = time.time,
) -> LiftResult:
    """Probe the pool's cooling rows (no lock), then in one transaction re-read the pool and
    clear every elapsed cooldown and every cooldown a probe said reopened.

    Reopened rows are cleared with :func:`store.pools.policy.reset` (stamps ``status_cleared_at``
    so a newer Hermes does not write the old cooldown back); a row benched again by someone
    else since the probe is left alone. Nothing is selected, leased or counted. *targets*
    limits probing and lifting to those row ids. The file is not written when nothing changed.
    """
    verdict_fn = verdict_fn or default_verdict_fn(home_env(home))
    now = clock() if now is None else now
    snap = read_store(home)
    rows = pool_rows(snap.doc or {}, pool)
    verdicts: dict[str, Verdict] = {}
    probed_at: dict[str, Any] = {}
    for row in rows:
        rid = str(row.get("id"))
        if targets is not None and rid not in targets:
            continue
        eff = policy.effective(row, rows, now, ttls)
        if eff.status == policy.COOLING:   # dead rows wait for a reset, not a probe
            verdicts[rid] = verdict_fn(pool, row)
            probed_at[rid] = row.get("last_status_at")

    cleared_elapsed: list[str] = []
    cleared_reopened: list[str] = []
    available = False
    wrote = False
    if snap.doc is None:
        return LiftResult(pool, verdicts, [], [], False, False)
    with transaction(home, lock_timeout=lock_timeout) as doc:
        fresh = [r for r in ensure_pool(doc, pool) if isinstance(r, dict)]
        scope = [r for r in fresh if targets is None or str(r.get("id")) in targets]
        ready = [r for r in scope if policy.effective(r, fresh, now, ttls).status == policy.READY]
        cleared_elapsed = [str(r.get("id")) for r in ready]
        # Judged against the whole pool above (the only-row rule needs it); a shorter
        # only-row TTL can only agree that these have elapsed.
        policy.clear_elapsed(ready, now, ttls)
        for row in scope:
            rid = str(row.get("id"))
            v = verdicts.get(rid)
            if v is None or not v.reopened:
                continue
            # Same cooldown as the one probed? A newer bench (or a reset) wins.
            if row.get("last_status") != STATUS_EXHAUSTED or row.get("last_status_at") != probed_at[rid]:
                continue
            policy.reset(row, now)
            cleared_reopened.append(rid)
        available = policy.has_available(fresh, now, ttls)
        if not cleared_elapsed and not cleared_reopened:
            skip_write()
        wrote = True
    return LiftResult(pool, verdicts, cleared_elapsed, cleared_reopened, available, wrote)
