"""A request's outcome as an agent sees it: whose fault a failure is, and when the
provider says the limit resets.

The vocabulary shared by :mod:`store.agent.pool_client`, :mod:`store.agent.runtime` and
the proxy: the :class:`Result` of one request, the :class:`Selection` it was sent with,
the :class:`Decision` on what to do next (action words below) and the :class:`Notice` an
agent shows its user.

:func:`classify` is the one judgement of a failure (spec section 6, RELIABILITY 31-33),
in agreement with Hermes's own classifier (``agent/error_classifier.py``) and
``recover_with_credential_pool``, which rotates a credential only for billing, rate limit
and auth:

- the **key's** fault (429, a quota or usage limit, 402, 401 after a failed refresh, a
  revoked token, a 403 that is not a refusal): the row is benched;
- the **route's** fault (no answer: refused, reset, timed out, TLS, a malformed or cut
  answer; a 5xx; an overloaded 429; an aggregator's wrapped upstream 429, where the key is
  healthy; a WAF page in front of the provider): nothing is benched or written;
- the **request's** fault (400, a content refusal, 404 model, 413, other 4xx): the client
  gets the provider's answer and nothing is benched.

:func:`reset_time` reads the provider's reset time from the body, ``Retry-After``, the
``x-ratelimit-reset*`` headers or the message, every number through :mod:`store.outside`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store import outside
from store.dialects.readings import Reading, Usage
from store.dialects.registry import header_reset, is_aggregator
from store.frozen import quick_init
from store.redaction.fingerprints import fingerprint
from store.redaction.redact import Redactor

# Action words of a Decision.
OK = "ok"              # the request succeeded
RETRY = "retry"        # send it again with the same row (first 429, or token refreshed)
ROTATED = "rotated"    # the row was benched; use the next row of the same pool
FALLBACK = "fallback"  # the pool is out; use the next entry of the fallback chain
OUT = "out"            # nothing left anywhere
FAILED = "failed"      # the request failed for a reason no rotation fixes (e.g. 400)
ROUTE_DOWN = "route_down"  # the route failed, nothing benched: the selection (another key,
#                            tried once) or, with none, the next entry of the chain

# Whose fault a failure is (Verdict.fault).
KEY = "key"
ROUTE = "route"
REQUEST = "request"

# Transport failures (Result.transport): the upstream gave no usable HTTP answer.
CONNECT, TIMEOUT, TLS, RESET, MALFORMED, TRUNCATED = (
    "connect", "timeout", "tls", "reset", "malformed", "truncated")

_USAGE_LIMIT = re.compile(
    r"usage.?limit|plan.?limit|insufficient.?quota|quota.?exceeded|exceeded your.*quota|"
    r"monthly limit|weekly limit|daily limit", re.IGNORECASE)
_RETRY_IN_MESSAGE = re.compile(r"retry\s+(?:after\s+|in\s+)?(\d{1,12}(?:\.\d{1,6})?)\s*(?:s\b|sec|seconds)",
                               re.IGNORECASE)
_RESETS_IN = re.compile(r"resets?\s+in\s+(?:(\d{1,6})\s*h(?:ou)?rs?\s*)?(?:(\d{1,6})\s*min(?:ute)?s?)?",
                        re.IGNORECASE)


def _any(*phrases: str) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(p) for p in phrases))


# What the providers say, in their own words (matched on the lower-cased error answer).
_REFUSAL = _any(  # a safety or moderation decision about this prompt
    "flagged for possible cybersecurity risk", "trusted access for cyber", "violates our usage policies",
    "violates openai's usage policies", "your request was flagged", "your input was flagged",
    "prompt was flagged by our safety", "responses cannot be generated due to safety",
    "content_filter", "responsibleaipolicyviolation", "new_sensitive", "requires moderation")
_OVERLOADED = _any("overloaded", "at capacity", "over capacity")
_BILLING = _any(
    "insufficient credits", "insufficient_quota", "insufficient balance", "credit balance",
    "credits exhausted", "credits have been exhausted", "no usable credits", "top up your credits",
    "payment required", "billing hard limit", "exceeded your current quota", "account is deactivated",
    "plan does not include", "out of extra usage", "out of funds", "balance_depleted",
    "not available on the free tier", "model_not_supported_on_free_tier", "key limit exceeded",
    "spending limit")
_RATE_LIMIT = _any("rate limit", "rate_limit", "too many requests", "throttled", "requests per minute",
                   "tokens per minute", "resource_exhausted")
_BAD_REQUEST = _any(  # deterministic for this request, whatever the status says
    "unknown parameter", "unsupported parameter", "unrecognized request argument", "unknown_parameter",
    "unsupported_parameter", "context length", "context window", "maximum context", "prompt is too long",
    "too many tokens", "context_length_exceeded", "model not found", "model_not_found", "invalid model",
    "is not a valid model", "no such model", "unknown model", "does not exist",
    "no endpoints found", "no endpoints available")
_WRAPPED = "provider returned error"   # OpenRouter's outer message around an upstream's error


@dataclass(frozen=True)
class Result:
    """One request's result as the agent saw it."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None       # provider error code/type, e.g. "token_revoked"
    message: str | None = None      # provider error message
    reset_at: Any = None            # provider-declared reset (s, ms or ISO)
    transport: str | None = None    # no usable answer: CONNECT, TIMEOUT, TLS, RESET, MALFORMED, TRUNCATED
    metadata: Mapping[str, Any] | None = None  # the error's ``metadata`` (OpenRouter)
    text: str = field(default="", repr=False)  # the error answer as received (capped), for matching
    structured: bool = True         # the answer was a JSON error (False: an HTML page, say)

    @classmethod
    def success(cls) -> Result:
        return cls(200)

    @classmethod
    def failed_transport(cls, kind: str, message: str) -> Result:
        """A request that got no usable answer (*kind*: CONNECT, TIMEOUT, ...)."""
        return cls(502, transport=kind, message=message, structured=False)


SUCCEEDED = Result(200)     # a success, shared (frozen): what the hot path passes on, built once


MESSAGE_CAP = 4096     # what a provider's error message may take up in a row


def stored_message(message: str | None, *secrets: str | None) -> str | None:
    """A provider's error message as a row may keep it (``last_error_message``, which every
    Hermes tool on the host prints): *secrets* (the row's own token) and any key-shaped text
    as fingerprints, at most :data:`MESSAGE_CAP` characters. A provider that echoes the key
    it was sent ("Incorrect API key provided: sk-...") never puts it in a second field."""
    if not message:
        return None
    return Redactor(secrets).redact(message)[:MESSAGE_CAP]


@quick_init
@dataclass(frozen=True)
class Verdict:
    """One answer, judged once (:func:`store.agent.judge.judge`): whose fault it is and
    what kind of failure (Hermes's ``FailoverReason`` names), and everything every consumer
    needs of the answer, so none re-reads it: the rate-limit readings, the ONE reset time
    (floored, or None: the TTL applies from *read_at*), the model and endpoint scope, and
    the usage the answer reports, and the 429 triage (:mod:`store.agent.triage`: a rate
    limit or a spent quota, and the provider's wait). :func:`classify` alone fills the first
    five fields."""

    fault: str | None               # KEY, ROUTE, REQUEST; None for a success
    kind: str                       # rate_limit, billing, auth, upstream_rate_limit, overloaded, ...
    failure_reason: str | None = None  # what a bench records (key faults only)
    answered: bool = True           # the upstream sent an HTTP answer (route faults)
    other_key_may_help: bool = True  # a route fault another key of the pool might not hit
    read_at: float | None = None    # when the answer was read: every bench of it is stamped then
    readings: tuple[Reading, ...] = ()
    reset_at: float | None = None   # when a bench for it ends (None: the TTL from read_at)
    exhausted_until: float | None = None   # a 2xx whose readings say nothing is left until then
    model: str | None = None        # the model asked for
    endpoint: str | None = None     # the endpoint scope: COUNT_TOKENS, or None (the model's own)
    model_scoped: bool = False      # a key's fault on one model (and endpoint) only, not the key
    usage: Usage | None = None      # what the answer says it spent (non-stream JSON answers)
    triage: str | None = None       # a key's limit: "rate_limit" or "quota" (store.agent.triage)
    wait: float | None = None       # seconds to the provider's reset as it said it (not floored)

    @property
    def scope(self) -> str | None:
        """The name a per-model bench of this verdict goes under in ``model_cooldowns``:
        the model, or for token counting ``count_tokens:<model>`` (Anthropic limits it
        apart: a 429 there never benches the model for Messages)."""
        return scoped(self.model, self.endpoint) if self.model_scoped else None


COUNT_TOKENS = "count_tokens"


def scoped(model: str | None, endpoint: str | None) -> str | None:
    """The name a per-model bench of *model* on *endpoint* goes under (see ``Verdict.scope``)."""
    if not model:
        return None
    return model if endpoint is None else f"{endpoint}:{model}"


SUCCESS = Verdict(None, "ok")


def classify(result: Result, pool: str | None = None) -> Verdict:
    """Whose fault *result* is (see the module docstring for the table)."""
    code = result.status
    if result.transport is not None:
        return Verdict(ROUTE, "timeout" if result.transport == TIMEOUT else "transport",
                       answered=result.transport == TRUNCATED)
    if 200 <= code < 400:
        return SUCCESS
    text = " ".join((result.reason or "", result.message or "", result.text)).lower()
    if _REFUSAL.search(text) or (code == 403 and _moderated(result)):
        return Verdict(REQUEST, "content_policy_blocked")
    if code == 401:
        return Verdict(KEY, "auth", "auth")
    if code == 402:
        return Verdict(KEY, "billing", "billing")
    if code == 429:
        if _OVERLOADED.search(text):
            return Verdict(ROUTE, "overloaded")
        if _wrapped_upstream(result, pool):
            return Verdict(ROUTE, "upstream_rate_limit", other_key_may_help=False)
        return Verdict(KEY, "rate_limit", "rate_limit")
    if code == 403:
        if _BILLING.search(text):
            return Verdict(KEY, "billing", "billing")
        if not result.structured:     # a WAF/CDN page in front of the provider, not its answer
            return Verdict(ROUTE, "upstream_blocked", other_key_may_help=False)
        return Verdict(KEY, "auth", "auth")
    if 400 <= code < 500:
        if code in (400, 404) and _BILLING.search(text) and not _BAD_REQUEST.search(text):
            return Verdict(KEY, "billing", "billing")
        if code == 400 and _RATE_LIMIT.search(text) and not _BAD_REQUEST.search(text):
            return Verdict(KEY, "rate_limit", "rate_limit")
        if code == 408:
            return Verdict(ROUTE, "timeout")
        return Verdict(REQUEST, {404: "model_not_found", 413: "payload_too_large"}.get(code, "format_error"))
    if 500 <= code < 600:
        if _BAD_REQUEST.search(text):
            return Verdict(REQUEST, "format_error")
        return Verdict(ROUTE, "overloaded" if code in (503, 529) else "server_error")
    return Verdict(ROUTE, "transport")     # a status no provider sends (1xx, 6xx-999)


def _moderated(result: Result) -> bool:
    """OpenRouter's moderation refusal: a 403 whose metadata names the flagged input."""
    meta = result.metadata
    return isinstance(meta, Mapping) and ("flagged_input" in meta or "reasons" in meta)


def _wrapped_upstream(result: Result, pool: str | None) -> bool:
    """An aggregator's 429 wrapping its upstream's (OpenRouter: "Provider returned error",
    with the upstream named in the metadata): the key is healthy."""
    if (result.message or "").strip().lower() != _WRAPPED:
        return False
    meta = result.metadata
    return is_aggregator(pool) or (isinstance(meta, Mapping) and ("raw" in meta or "provider_name" in meta))


@quick_init
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
    """The ``failure_reason`` a credential is benched with for HTTP *code* alone, or None
    when the code is never the credential's problem. :func:`classify` decides with the
    answer's text as well; this is its answer for a bare status."""
    verdict = classify(Result(code))
    return verdict.failure_reason if verdict.fault == KEY else None


def reset_time(result: Result, now: float, notice: outside.Notice | None = None) -> float | None:
    """The provider's reset time as epoch seconds, from the body, the headers or the message.

    ``Retry-After`` (seconds or HTTP date), ``x-ratelimit-reset`` (epoch s/ms, or seconds
    from now when small), ``x-ratelimit-reset-requests``/``-tokens`` (``6m0s``), then
    "retry after N seconds" / "resets in 4hr 5min" in the message. Every value passes
    :mod:`store.outside`: one that is not a finite time within a year is discarded (said
    through *notice*), and the policy's TTL applies instead.
    """
    if result.reset_at is not None:
        explicit = outside.epoch(result.reset_at, "the reset time in the answer", now=now, notice=notice)
        if explicit is not None:
            return explicit
    after = header_reset(result.headers or {}, now, notice)
    if after is not None:
        return after
    msg = (result.message or "")[:4096]
    m = _RETRY_IN_MESSAGE.search(msg)
    if m:
        s = outside.seconds(m.group(1), "the retry time in the message", notice=notice)
        if s is not None:
            return now + s
    m = _RESETS_IN.search(msg)
    if m and (m.group(1) or m.group(2)):
        s = outside.seconds(int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60,
                            "the reset time in the message", notice=notice)
        if s is not None:
            return now + s
    return None
