"""Whose fault an answer is (``store.agent.outcomes.classify``), phrase by phrase and status by status.

The outcome table (``tests/proxy/outcome_table.py``) holds the providers' real answers; this
file pins every phrase the classifier knows (each one alone must decide the verdict, in any
case), every status boundary, the wrapped-upstream and moderation rules, the reset time read
from the answer's body, headers and message, and the small values around them (the stored
message's cap, a transport failure, a selection's fingerprint, the bench scope). A phrase
dropped from a list, a boundary moved by one or a cap off by one fails a line here.
Negative control: the last test moves the 5xx boundary and sees a 599 taken for a transport.
"""

from __future__ import annotations

import pytest

from store.agent import outcomes
from store.agent.outcomes import (
    COUNT_TOKENS,
    KEY,
    MESSAGE_CAP,
    REQUEST,
    ROUTE,
    SUCCESS,
    Result,
    Selection,
    Verdict,
    classify,
    failure_reason,
    is_usage_limit,
    reset_time,
    scoped,
    stored_message,
)
from tests.mutant import mutant

T = 1_700_000_000.0
KEY_TEXT = "sk-or-v1-outcomesexact-" + "q" * 40

REFUSALS = ["flagged for possible cybersecurity risk", "trusted access for cyber", "violates our usage policies",
            "violates openai's usage policies", "your request was flagged", "your input was flagged",
            "prompt was flagged by our safety", "responses cannot be generated due to safety",
            "content_filter", "responsibleaipolicyviolation", "new_sensitive", "requires moderation"]
OVERLOADED = ["overloaded", "at capacity", "over capacity"]
BILLING = ["insufficient credits", "insufficient_quota", "insufficient balance", "credit balance",
           "credits exhausted", "credits have been exhausted", "no usable credits", "top up your credits",
           "payment required", "billing hard limit", "exceeded your current quota", "account is deactivated",
           "plan does not include", "out of extra usage", "out of funds", "balance_depleted",
           "not available on the free tier", "model_not_supported_on_free_tier", "key limit exceeded",
           "spending limit"]
RATE_LIMIT = ["rate limit", "rate_limit", "too many requests", "throttled", "requests per minute",
              "tokens per minute", "resource_exhausted"]
BAD_REQUEST = ["unknown parameter", "unsupported parameter", "unrecognized request argument", "unknown_parameter",
               "unsupported_parameter", "context length", "context window", "maximum context",
               "prompt is too long", "too many tokens", "context_length_exceeded", "model not found",
               "model_not_found", "invalid model", "is not a valid model", "no such model", "unknown model",
               "does not exist", "no endpoints found", "no endpoints available"]


def _fault(result: Result, pool: str | None = None) -> tuple:
    v = classify(result, pool)
    return v.fault, v.kind, v.failure_reason


# --- every phrase, alone, in any case ------------------------------------------------------------------

@pytest.mark.parametrize("phrase", REFUSALS)
def test_each_refusal_phrase_is_the_requests_fault(phrase):
    assert _fault(Result(429, message=f"Sorry: {phrase.upper()}.")) == (REQUEST, "content_policy_blocked", None)


@pytest.mark.parametrize("phrase", OVERLOADED)
def test_each_overloaded_phrase_makes_a_429_the_routes(phrase):
    assert _fault(Result(429, message=f"Upstream {phrase.title()} now")) == (ROUTE, "overloaded", None)


@pytest.mark.parametrize("phrase", BILLING)
def test_each_billing_phrase_makes_a_403_a_billing_bench(phrase):
    assert _fault(Result(403, message=f"Error: {phrase.upper()}")) == (KEY, "billing", "billing")
    assert _fault(Result(404, reason=phrase)) == (KEY, "billing", "billing")
    assert _fault(Result(400, message=phrase)) == (KEY, "billing", "billing")


@pytest.mark.parametrize("phrase", RATE_LIMIT)
def test_each_rate_limit_phrase_makes_a_400_a_rate_limit(phrase):
    assert _fault(Result(400, text=f'{{"error": "{phrase.upper()}"}}')) == (KEY, "rate_limit", "rate_limit")


@pytest.mark.parametrize("phrase", BAD_REQUEST)
def test_each_bad_request_phrase_makes_a_5xx_the_requests(phrase):
    assert _fault(Result(500, message=phrase.upper())) == (REQUEST, "format_error", None)
    assert _fault(Result(400, message=f"{phrase}; rate limit")) == (REQUEST, "format_error", None)
    assert _fault(Result(400, message=f"{phrase}; credit balance")) == (REQUEST, "format_error", None)


@pytest.mark.parametrize("text", [
    "Usage limit reached", "usage_limit", "plan limit", "Insufficient quota", "quota exceeded",
    "You exceeded your current monthly quota", "monthly limit", "weekly limit", "daily limit",
])
def test_each_usage_limit_phrase(text):
    assert is_usage_limit(Result(429, message=text)) is True
    assert is_usage_limit(Result(429, reason=text)) is True


def test_no_usage_limit_in_a_plain_rate_limit():
    assert is_usage_limit(Result(429, message="rate limited", text="usage limit")) is False


# --- status boundaries ------------------------------------------------------------------------------------

@pytest.mark.parametrize("status,want", [
    (199, (ROUTE, "transport", None)), (200, (None, "ok", None)), (399, (None, "ok", None)),
    (400, (REQUEST, "format_error", None)), (401, (KEY, "auth", "auth")), (402, (KEY, "billing", "billing")),
    (403, (KEY, "auth", "auth")), (404, (REQUEST, "model_not_found", None)), (408, (ROUTE, "timeout", None)),
    (413, (REQUEST, "payload_too_large", None)), (429, (KEY, "rate_limit", "rate_limit")),
    (499, (REQUEST, "format_error", None)), (500, (ROUTE, "server_error", None)),
    (503, (ROUTE, "overloaded", None)), (529, (ROUTE, "overloaded", None)), (599, (ROUTE, "server_error", None)),
    (600, (ROUTE, "transport", None)),
])
def test_a_bare_status(status, want):
    assert _fault(Result(status)) == want


def test_a_success_is_the_shared_value():
    assert classify(Result(204)) is SUCCESS and classify(Result.success()) is SUCCESS
    assert Result.success() == Result(200)


@pytest.mark.parametrize("status,want", [(401, "auth"), (402, "billing"), (403, "auth"), (429, "rate_limit"),
                                         (400, None), (404, None), (408, None), (500, None), (200, None)])
def test_failure_reason_of_a_bare_status(status, want):
    assert failure_reason(status) == want


@pytest.mark.parametrize("kind,want_kind,answered", [
    ("connect", "transport", False), ("timeout", "timeout", False), ("tls", "transport", False),
    ("reset", "transport", False), ("malformed", "transport", False), ("truncated", "transport", True),
])
def test_no_usable_answer_is_the_routes(kind, want_kind, answered):
    v = classify(Result.failed_transport(kind, "boom"))
    assert (v.fault, v.kind, v.answered, v.other_key_may_help) == (ROUTE, want_kind, answered, True)


def test_failed_transport_shape():
    assert Result.failed_transport("tls", "bad cert") == Result(502, transport="tls", message="bad cert",
                                                                structured=False)


# --- 403s, wrapped 429s -------------------------------------------------------------------------------------

def test_a_403_page_that_is_no_json_is_the_routes():
    v = classify(Result(403, message="Forbidden", structured=False))
    assert (v.fault, v.kind, v.other_key_may_help) == (ROUTE, "upstream_blocked", False)
    assert _fault(Result(403, message="credit balance", structured=False)) == (KEY, "billing", "billing")


@pytest.mark.parametrize("meta,want", [
    ({"flagged_input": "x"}, (REQUEST, "content_policy_blocked", None)),
    ({"reasons": ["hate"]}, (REQUEST, "content_policy_blocked", None)),
    ({"other": 1}, (KEY, "auth", "auth")),
    (["flagged_input"], (KEY, "auth", "auth")),
])
def test_a_403_with_moderation_metadata(meta, want):
    assert _fault(Result(403, message="Forbidden", metadata=meta)) == want
    assert _fault(Result(401, message="Forbidden", metadata=meta)) == (KEY, "auth", "auth")


@pytest.mark.parametrize("pool,meta,fault", [
    ("openrouter", None, ROUTE),
    ("anthropic", None, KEY),
    ("anthropic", {"raw": "..."}, ROUTE),
    ("anthropic", {"provider_name": "x"}, ROUTE),
    ("anthropic", {"other": 1}, KEY),
    ("anthropic", ["raw"], KEY),
    (None, None, KEY),
])
def test_a_wrapped_upstream_429(pool, meta, fault):
    v = classify(Result(429, message="  Provider Returned Error ", metadata=meta), pool)
    assert v.fault == fault
    if fault == ROUTE:
        assert (v.kind, v.other_key_may_help) == ("upstream_rate_limit", False)


def test_a_429_that_only_mentions_the_wrapper_is_the_keys():
    assert classify(Result(429, message="provider returned error: slow down"), "openrouter").fault == KEY


# --- the reset time ------------------------------------------------------------------------------------------

def test_the_bodys_reset_comes_first():
    r = Result(429, reset_at=T + 77, headers={"retry-after": "30"}, message="retry after 5 seconds")
    assert reset_time(r, T) == T + 77
    r = Result(429, reset_at="nonsense", headers={"retry-after": "30"})
    assert reset_time(r, T) == T + 30


def test_headers_before_the_message():
    assert reset_time(Result(429, headers={"retry-after": "30"}, message="retry after 5 seconds"), T) == T + 30


@pytest.mark.parametrize("message,seconds", [
    ("Please retry after 20 seconds.", 20),
    ("retry in 2.5s", 2.5),
    ("Retry 7 sec", 7),
    ("RETRY AFTER 9 S", 9),
    ("Your limit resets in 4hr 5min", 4 * 3600 + 5 * 60),
    ("resets in 2 hours", 7200),
    ("reset in 10 minutes", 600),
    ("Resets in 1 hour 1 minute", 3660),
])
def test_the_message_says_when(message, seconds):
    assert reset_time(Result(429, message=message), T) == T + seconds


@pytest.mark.parametrize("message", ["resets in soon", "retry later", "", None, "retry after 10 minutes"])
def test_the_message_says_nothing_usable(message):
    assert reset_time(Result(429, message=message), T) is None


def test_only_the_first_4096_characters_of_a_message_are_read():
    assert reset_time(Result(429, message="x" * 4070 + " retry after 5 seconds"), T) == T + 5
    assert reset_time(Result(429, message="x" * 4096 + " retry after 5 seconds"), T) is None
    cut = "retry after 5 se"
    assert reset_time(Result(429, message="x" * (4096 - len(cut)) + cut + "c"), T) is None     # "sec" cut at 4096


def test_an_unusable_reset_is_said_and_dropped():
    said = []
    assert reset_time(Result(429, message="resets in 999999 hours"), T, said.append) is None
    assert len(said) == 1


# --- the small values ----------------------------------------------------------------------------------------

def test_stored_message_fingerprints_and_caps():
    assert stored_message(None) is None and stored_message("") is None
    got = stored_message(f"Incorrect API key provided: {KEY_TEXT}", KEY_TEXT)
    assert KEY_TEXT not in got and got.startswith("Incorrect API key provided: ")
    assert stored_message("y" * (MESSAGE_CAP + 10)) == "y" * MESSAGE_CAP
    assert MESSAGE_CAP == 4096


def test_a_selection_shows_its_fingerprint_never_its_token():
    sel = Selection("openrouter", "r1", "k1", KEY_TEXT, None, "m")
    assert KEY_TEXT not in repr(sel) and sel.fingerprint is not None and KEY_TEXT not in sel.fingerprint


def test_the_scope_of_a_bench():
    assert scoped(None, COUNT_TOKENS) is None and scoped("", None) is None
    assert scoped("m", None) == "m" and scoped("m", COUNT_TOKENS) == "count_tokens:m"
    assert Verdict(KEY, "rate_limit", model="m", endpoint=COUNT_TOKENS, model_scoped=True).scope == "count_tokens:m"
    assert Verdict(KEY, "rate_limit", model="m", model_scoped=False).scope is None


def test_the_action_words():
    assert (outcomes.OK, outcomes.RETRY, outcomes.ROTATED, outcomes.FALLBACK, outcomes.OUT, outcomes.FAILED,
            outcomes.ROUTE_DOWN) == ("ok", "retry", "rotated", "fallback", "out", "failed", "route_down")
    assert (KEY, ROUTE, REQUEST) == ("key", "route", "request")


# --- negative control -----------------------------------------------------------------------------------------

def test_control_a_5xx_boundary_off_by_one_is_caught():
    broken = mutant("store.agent.outcomes", "    if 500 <= code < 600:", "    if 500 <= code < 599:")
    v = broken.classify(broken.Result(599))
    assert (v.fault, v.kind) == (ROUTE, "transport")        # the slip: a 599 is no server error
    assert _fault(Result(599)) == (ROUTE, "server_error", None)
