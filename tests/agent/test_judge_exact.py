"""One judgement per answer (``store.agent.judge``), value by value.

The proxy tests check verdicts through requests (``test_one_verdict.py``, the outcome
table); these pin each part of one verdict exactly: the reset time and which source wins
(the answer's own reset, else an empty window's), the floor, the readings taken from the
headers or handed in, the model scope and when a message names the model, the endpoint of a
path, and the usage of a JSON body at the size cap and past the decoded slice. Negative
control: the last test drops the floor's caller and sees a ``Retry-After: 0`` bench end at
once.
"""

from __future__ import annotations

import json

import pytest

from store.agent import judge as judge_mod
from store.agent.judge import USAGE_CAP, USAGE_SLICE, endpoint_of, judge, judge_success, model_scoped, usage_in
from store.agent.outcomes import COUNT_TOKENS, KEY, ROUTE, SUCCESS, Result, classify
from store.dialects.readings import Reading, Usage
from store.dialects.registry import dialect_for
from store.pools.policy import BENCH_FLOOR
from tests.mutant import mutant

T = 1_700_000_000.0
# An Anthropic window: its reset is the window's, not the answer's (reset_time leaves it).
EMPTY = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
         "anthropic-ratelimit-requests-reset": "2023-11-14T22:13:40Z"}      # nothing left until T + 20
ROOM = {**EMPTY, "anthropic-ratelimit-requests-remaining": "40"}
OPENAI = dialect_for("openrouter", "https://openrouter.ai/api/v1")
ANTHROPIC = dialect_for("anthropic", "https://api.anthropic.com", True)


# --- endpoint_of ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path,want", [
    ("/v1/messages/count_tokens", COUNT_TOKENS),
    ("/v1/messages/count_tokens/", COUNT_TOKENS),
    ("/v1/messages", None),
    ("/v1/messages/count_tokens_batch", None),
    ("/v1/messages/count_tokensX", None),
    ("count_tokens", None),
    (None, None),
])
def test_endpoint_of_a_path(path, want):
    assert endpoint_of(path) == want


# --- judge: the reset time ------------------------------------------------------------------------

def test_the_answers_reset_wins_over_an_empty_window():
    v = judge(Result(429, headers={"retry-after": "30", **EMPTY}, message="rate limited"), T, pool="openrouter")
    assert (v.fault, v.kind, v.failure_reason) == (KEY, "rate_limit", "rate_limit")
    assert v.reset_at == T + 30 and v.read_at == T
    assert [(r.window, r.remaining, r.reset_at) for r in v.readings] == [("requests", 0.0, T + 20)]


def test_without_the_answers_reset_an_empty_window_gives_it():
    v = judge(Result(429, headers=EMPTY, message="rate limited"), T, pool="openrouter")
    assert v.reset_at == T + 20


def test_without_any_reset_the_ttl_applies():
    v = judge(Result(429, headers=ROOM, message="rate limited"), T, pool="openrouter")
    assert v.reset_at is None and v.read_at == T and len(v.readings) == 1


def test_the_empty_window_ends_at_t_plus_20():
    assert EMPTY["anthropic-ratelimit-requests-reset"] == "2023-11-14T22:13:40Z" and T == 1_700_000_000.0
    assert judge(Result(429, headers=EMPTY, message="rate limited"), T, pool="anthropic").readings[0].reset_at == T + 20


def test_a_reset_now_is_floored():
    v = judge(Result(429, headers={"retry-after": "0"}, message="rate limited"), T, pool="openrouter")
    assert v.reset_at == T + BENCH_FLOOR


def test_readings_handed_in_replace_the_headers():
    given = (Reading("tokens", "openai", T, limit=10.0, remaining=0.0, reset_at=T + 40),)
    v = judge(Result(429, headers=EMPTY, message="rate limited"), T, pool="openrouter", readings=given)
    assert v.readings == given and v.reset_at == T + 40
    v = judge(Result(429, headers=EMPTY, message="rate limited"), T, pool="openrouter", readings=())
    assert v.readings == () and v.reset_at is None


def test_a_route_fault_carries_its_reset_and_readings_too():
    v = judge(Result(503, headers={"retry-after": "12", **ROOM}, message="overloaded"), T, pool="openrouter",
              model="m", endpoint=COUNT_TOKENS)
    assert (v.fault, v.kind) == (ROUTE, "overloaded")
    assert v.reset_at == T + 12 and len(v.readings) == 1
    assert (v.model, v.endpoint, v.model_scoped) == ("m", COUNT_TOKENS, False)


def test_an_answer_that_is_no_fault_says_when_its_window_empties():
    v = judge(Result(200, headers=EMPTY), T, model="m", endpoint=COUNT_TOKENS)
    assert (v.fault, v.kind, v.read_at) == (None, "ok", T)
    assert [(r.window, r.remaining) for r in v.readings] == [("requests", 0.0)]
    assert v.exhausted_until == T + 20 and v.reset_at is None
    assert (v.model, v.endpoint) == ("m", COUNT_TOKENS)
    assert judge(Result(200, headers=ROOM), T).exhausted_until is None


def test_whose_fault_is_judged_for_the_pool_given():
    wrapped = Result(429, message="Provider returned error")          # no metadata: the pool decides
    assert (judge(wrapped, T, pool="openrouter").fault, judge(wrapped, T, pool="openrouter").kind) == \
        (ROUTE, "upstream_rate_limit")
    assert judge(wrapped, T, pool="openrouter").other_key_may_help is False
    assert judge(wrapped, T, pool="openrouter").answered is True
    assert judge(wrapped, T, pool="anthropic").fault == KEY


def test_a_transport_failure_keeps_that_nothing_answered():
    v = judge(Result(0, transport="connect"), T, pool="openrouter")
    assert (v.fault, v.answered, v.other_key_may_help) == (ROUTE, False, True)


def test_an_unusable_reset_is_said_through_the_notice():
    said = []
    v = judge(Result(429, message="rate limited", reset_at="not a time"), T, pool="openrouter", notice=said.append)
    assert v.reset_at is None and len(said) == 1 and "reset time" in said[0]


# --- judge: the model scope -----------------------------------------------------------------------

def test_a_per_model_dialects_429_benches_the_model_and_endpoint():
    v = judge(Result(429, reason="rate_limit_error", message="Number of requests has exceeded your rate limit."),
              T, pool="anthropic", model="claude-x", endpoint=COUNT_TOKENS, per_model_429=True)
    assert v.model_scoped is True and v.scope == f"{COUNT_TOKENS}:claude-x"
    v = judge(Result(429, message="rate limited"), T, pool="anthropic", model="claude-x", per_model_429=False)
    assert v.model_scoped is False and v.scope is None


def test_a_key_fault_that_is_no_rate_limit_is_never_model_scoped():
    v = judge(Result(401, message="invalid key for claude-x"), T, pool="anthropic", model="claude-x",
              per_model_429=True)
    assert (v.kind, v.model_scoped) == ("auth", False)


@pytest.mark.parametrize("message,model,want", [
    ("Rate limit reached for gpt-4o in organization org-1", "gpt-4o", True),
    ("rate limit reached FOR GPT-4O on requests", "gpt-4o", True),
    ("Rate limit exceeded, model: gpt-4o", "gpt-4o", True),
    ("Rate limit exceeded: model gpt-4o is busy", "gpt-4o", True),
    ("Rate limit reached for 'gpt-4o'", "gpt-4o", True),
    ("Rate limit reached for gpt-4o-mini", "gpt-4o", False),     # another model's name
    ("Rate limit reached for gpt-4o", "gpt-4", False),
    ("Rate limit reached, try gpt-4o later", "gpt-4o", False),    # named, but not as the limit's
    ("Rate limit reached for gpt-4o", None, False),
    ("Rate limit reached for gpt-4o", "", False),
])
def test_elsewhere_a_rate_limit_is_the_models_when_its_message_names_it(message, model, want):
    result = Result(429, message=message)
    assert model_scoped(result, classify(result, "openai"), model, per_model_429=False) is want
    assert judge(result, T, pool="openai", model=model).model_scoped is want


def test_the_model_may_be_named_in_the_reason():
    result = Result(429, reason="Rate limit reached for gpt-4o", message=None)
    assert model_scoped(result, classify(result, "openai"), "gpt-4o", per_model_429=False) is True
    split = Result(429, message="Rate limit reached for", reason="gpt-4o")      # message, then reason
    assert model_scoped(split, classify(split, "openai"), "gpt-4o", per_model_429=False) is True


@pytest.mark.parametrize("message", [
    "The usage limit has been reached for your plan.",
    "Your credit balance is too low to access the Anthropic API.",
])
def test_a_usage_or_billing_limit_is_never_one_models(message):
    result = Result(429, reason="rate_limit_error", message=message + " (claude-x)")
    verdict = classify(result, "anthropic")
    assert verdict.kind == "rate_limit"
    assert model_scoped(result, verdict, "claude-x", per_model_429=True) is False


@pytest.mark.parametrize("result", [
    Result(429, reason="insufficient_quota", message="slow down"),                      # a usage limit too
    Result(429, reason="payment required", message="slow down"),                        # the reason says it
    Result(429, message="slow down", text='{"error": "credit balance too low"}'),      # the answer's text
    Result(429, message="credit balance too low; model not found"),                     # a 404 would be billing
])
def test_billing_words_anywhere_in_the_answer_are_no_models_limit(result):
    verdict = classify(result, "anthropic")
    assert verdict.kind == "rate_limit"
    assert model_scoped(result, verdict, "claude-x", per_model_429=True) is False


def test_per_model_scope_needs_a_429():
    result = Result(429, reason="rate_limit_error", message="Number of requests has exceeded your rate limit.")
    verdict = classify(result, "anthropic")
    assert model_scoped(result, verdict, "claude-x", per_model_429=True) is True
    other = Result(529, reason="rate_limit_error", message="Number of requests has exceeded your rate limit.")
    assert model_scoped(other, verdict, "claude-x", per_model_429=True) is False


# --- judge_success ---------------------------------------------------------------------------------

def test_a_plain_success_is_the_shared_value():
    assert judge_success(T) is SUCCESS
    assert judge_success(T, dialect=OPENAI, body=b"") is SUCCESS
    assert judge_success(T, dialect=None, body=b'{"usage":{"prompt_tokens":3}}') is SUCCESS


def test_a_success_keeps_what_a_consumer_needs():
    r = Reading("requests", "openai", T, limit=10.0, remaining=0.0, reset_at=T + 9)
    v = judge_success(T, (r,))
    assert v is not SUCCESS and (v.fault, v.kind, v.read_at, v.readings) == (None, "ok", T, (r,))
    assert v.exhausted_until == T + 9
    roomy = Reading("requests", "openai", T, limit=10.0, remaining=4.0, reset_at=T + 9)
    assert judge_success(T, (roomy,)).exhausted_until is None
    v = judge_success(T, model="m")
    assert v is not SUCCESS and (v.model, v.endpoint, v.exhausted_until) == ("m", None, None)
    v = judge_success(T, endpoint=COUNT_TOKENS)
    assert v is not SUCCESS and v.endpoint == COUNT_TOKENS
    v = judge_success(T, dialect=OPENAI, body=b'{"usage":{"prompt_tokens":3,"completion_tokens":4}}')
    assert v.usage == Usage(3, 4) and v.read_at == T


# --- usage_in --------------------------------------------------------------------------------------

def _padded(n: int) -> bytes:
    body = b'{"usage":{"prompt_tokens":3,"completion_tokens":4}}'
    return body[:-1] + b" " * (n - len(body)) + b"}"


def test_usage_in_reads_the_dialects_fields():
    assert usage_in(OPENAI, b'{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4}}') == Usage(3, 4)
    assert usage_in(ANTHROPIC, b'{"usage" :  {"input_tokens":5,"output_tokens":6}}') == Usage(5, 6)


def test_usage_in_takes_the_last_usage_object():
    body = b'{"choices":[{"usage":{"prompt_tokens":1}}],"usage":{"prompt_tokens":2,"completion_tokens":7}}'
    assert usage_in(OPENAI, body) == Usage(2, 7)


def test_usage_in_stops_at_the_size_cap():
    assert len(_padded(USAGE_CAP)) == USAGE_CAP
    assert usage_in(OPENAI, _padded(USAGE_CAP)) == Usage(3, 4)
    assert usage_in(OPENAI, _padded(USAGE_CAP + 1)) is None


def test_usage_in_decodes_the_whole_body_when_the_slice_is_not_enough():
    pad = "x" * (USAGE_SLICE + 10)
    body = json.dumps({"usage": {"prompt_tokens": 3, "note": pad, "completion_tokens": 4}}).encode()
    assert usage_in(OPENAI, body) == Usage(3, 4)


@pytest.mark.parametrize("body", [
    b'{"id":"x"}',
    b'{"note":"usage"}',
    b'{"usage": 3}',
    b'{"usage":{"prompt_tokens":3',                # cut off
    b"<html>usage</html>",
])
def test_usage_in_without_a_usage_object_is_none(body):
    assert usage_in(OPENAI, body) is None


def test_usage_in_takes_the_object_right_after_its_name():
    body = b'{"usage":{"prompt_tokens":3,"d":{"x":1}}} trailing'      # not JSON as a whole: the slice decides
    assert usage_in(OPENAI, body) == Usage(3, None)
    assert usage_in(OPENAI, b'"usage":{"prompt_tokens":4}') == Usage(4, None)      # the name at the start
    assert usage_in(OPENAI, b'{"note": "usage", "x": {"prompt_tokens": 3}}') is None  # a value, then an object


def test_usage_in_replaces_bytes_that_are_not_utf8():
    assert usage_in(OPENAI, b'{"usage":{"prompt_tokens":3,"n":"\xff"}}') == Usage(3, None)


def test_usage_in_a_usage_word_before_the_object():
    body = b'{"usage" "x", "usage":{"prompt_tokens":3}}'     # not JSON: the fast path finds the last one
    assert usage_in(OPENAI, body) == Usage(3, None)
    body = b'{"why":"\\"usage\\" says", "usage":{"prompt_tokens":8}}'
    assert usage_in(OPENAI, body) == Usage(8, None)


# --- negative control ------------------------------------------------------------------------------

def test_control_a_judge_without_the_floor_is_caught():
    broken = mutant("store.agent.judge", "reset_at=policy.bench_reset(reset, now)", "reset_at=reset")
    v = broken.judge(Result(429, headers={"retry-after": "0"}, message="rate limited"), T, pool="openrouter")
    assert v.reset_at == T                 # the slip: a bench that ends as it starts
    assert judge_mod.judge(Result(429, headers={"retry-after": "0"}, message="rate limited"), T,
                           pool="openrouter").reset_at == T + BENCH_FLOOR
