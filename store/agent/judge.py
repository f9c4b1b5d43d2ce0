"""One judgement per answer: :func:`judge` reads an upstream's answer ONCE into a
:class:`~store.agent.outcomes.Verdict`, and every consumer (the benches in the proxy's view
and in auth.json, headroom, breakers, counts, metrics, the request log) takes that value.

What it decides, and by which one rule:

- whose fault (:func:`store.agent.outcomes.classify`);
- the readings (:func:`store.dialects.registry.read_headers`, every dialect: an endpoint
  does not say which it speaks), unless the caller already read them off the headers;
- the reset time: the body's explicit reset, ``Retry-After``, the OpenAI-style
  ``x-ratelimit-reset*``, then the latest reset of a window the answer says is empty (an
  Anthropic ``anthropic-ratelimit-*-reset``), then the message's words; floored at
  :data:`store.pools.policy.BENCH_FLOOR` from *now*. ``Retry-After`` wins over a window's
  reset: it is what the provider says of this answer;
- the model scope: a rate limit the dialect scopes to one model (every Anthropic 429 that
  is no usage or billing limit; elsewhere a message naming the model asked for), and the
  endpoint scope (``count_tokens`` is limited apart from ``messages``);
- the usage, from a JSON answer's body when the caller hands it over;
- the 429 triage (:mod:`store.agent.triage`): a rate limit or a spent quota, and the
  seconds to the provider's reset as it said it.

Pure: the clock is passed in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from store import outside
from store.agent.outcomes import COUNT_TOKENS, SUCCESS, Result, Verdict, classify, is_usage_limit, reset_time
from store.agent.ratelimits import blocked_until
from store.agent.triage import triage
from store.dialects.dialect import Dialect
from store.dialects.readings import Reading, Usage
from store.dialects.registry import read_headers
from store.pools import policy

USAGE_CAP = 1 << 20      # a JSON answer larger than this is not parsed for its usage
USAGE_SLICE = 4096       # bytes after ``"usage":`` decoded first
_DECODER = json.JSONDecoder()


def endpoint_of(path: str | None) -> str | None:
    """The endpoint scope of a client *path*: ``count_tokens``, or None (the model's own)."""
    return COUNT_TOKENS if path is not None and path.rstrip("/").endswith("/count_tokens") else None


def judge(result: Result, now: float, *, pool: str | None = None, readings: Sequence[Reading] | None = None,
          model: str | None = None, endpoint: str | None = None, per_model_429: bool = False,
          notice: outside.Notice | None = None) -> Verdict:
    """The verdict on one failed (or bodiless) answer; see the module docstring."""
    v = classify(result, pool)
    got = tuple(readings) if readings is not None else (
        tuple(read_headers(result.headers, now)) if result.headers else ())
    if v.fault is None:
        return Verdict(None, v.kind, read_at=now, readings=got, exhausted_until=blocked_until(got, now, floored=True),
                       model=model, endpoint=endpoint)
    reset = reset_time(result, now, notice)
    if reset is None and v.fault is not None:
        reset = blocked_until(got, now)        # a window the answer says is empty
    scoped = v.kind == "rate_limit" and model_scoped(result, v, model, per_model_429)
    limit, wait = triage(result, v.fault, v.kind, got, reset, now)
    return Verdict(v.fault, v.kind, v.failure_reason, v.answered, v.other_key_may_help, read_at=now,
                   readings=got, reset_at=policy.bench_reset(reset, now), model=model, endpoint=endpoint,
                   model_scoped=scoped, triage=limit, wait=wait)


def judge_success(now: float, readings: Sequence[Reading] = (), *, dialect: Dialect | None = None,
                  body: bytes | None = None, model: str | None = None, endpoint: str | None = None,
                  notice: outside.Notice | None = None) -> Verdict:
    """The verdict on a 2xx: its readings (and when they say nothing is left), and the
    usage of a JSON *body* (parsed only when *dialect* and *body* are given; a hostile
    value in it is dropped, said through *notice*)."""
    got = tuple(readings)
    usage = usage_in(dialect, body, notice) if dialect is not None and body else None
    if not got and usage is None and model is None and endpoint is None:
        return SUCCESS          # nothing in this answer for any consumer: the shared plain success
    return Verdict(None, "ok", read_at=now, readings=got,
                   exhausted_until=blocked_until(got, now, floored=True) if got else None,
                   model=model, endpoint=endpoint, usage=usage)


def usage_in(dialect: Dialect, body: bytes, notice: outside.Notice | None = None) -> Usage | None:
    """The usage a JSON answer reports, in *dialect*'s fields (None: not JSON, too large, or
    none). Only the last ``"usage"`` object is decoded (a few microseconds on the request
    path); a body where that fails is decoded whole."""
    if len(body) > USAGE_CAP:
        return None
    at = body.rfind(b'"usage"')
    if at < 0:
        return None
    start = body.find(b"{", at)
    if start > 0 and body[at + 7:start].strip() == b":":
        try:
            block, _end = _DECODER.raw_decode(body[start:start + USAGE_SLICE].decode("utf-8", "replace"))
            return dialect.usage({"usage": block}, notice)
        except (ValueError, RecursionError):
            pass
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return dialect.usage(data, notice)


def _says_billing(result: Result) -> bool:
    """The answer's words are a billing limit's (the classifier's billing phrases, asked
    through a 402-free 403: the one place those phrases are kept)."""
    probe = Result(403, reason=result.reason, message=result.message, text=result.text)
    return classify(probe).kind == "billing"


def model_scoped(result: Result, verdict: Verdict, model: str | None, per_model_429: bool) -> bool:
    """Whether a key's fault *result* is the provider's limit on *model* only: on a dialect
    whose 429s are per model (Anthropic, as newer Hermes's ``_is_model_scoped_failure``),
    every rate-limit 429 that is no usage or billing limit; elsewhere a rate limit whose
    message names the model asked for ("Rate limit reached for gpt-4o ...")."""
    if not model or verdict.kind != "rate_limit" or is_usage_limit(result) or _says_billing(result):
        return False
    if per_model_429:
        return result.status == 429
    text = " ".join(filter(None, (result.message, result.reason)))
    named = re.compile(r"(?:\bfor|\bmodel[:=]?)\s+['\"`]?" + re.escape(model) + r"(?![\w.-])", re.IGNORECASE)
    return bool(named.search(text))
