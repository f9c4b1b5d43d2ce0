"""store.agent.ratelimits: one reader of every rate-limit dialect (spec ratelimit-headers.md).

A table per dialect: scripted headers or bodies in, readings out, including broken and
hostile values (which are ignored, never an error)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.agent.ratelimits import blocked_until, tightest
from store.dialects.codex import read_codex_usage
from store.dialects.openai import read_openrouter_key
from store.dialects.readings import Reading, go_duration
from store.dialects.registry import read_headers

NOW = 1_800_000_000.0


def _one(readings, window):
    found = [r for r in readings if r.window == window]
    assert len(found) == 1, readings
    return found[0]


@pytest.mark.parametrize("text, seconds", [
    ("12ms", 0.012), ("1s", 1.0), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("500us", 0.0005),
    ("", None), ("6m0", None), ("abc", None), ("1e300h", None), ("99999999h", None), ("-5s", None),
])
def test_go_durations(text, seconds) -> None:
    got = go_duration(text)
    assert got == seconds or (seconds is not None and got is not None and math.isclose(got, seconds))


def test_openai_requests_and_tokens() -> None:
    r = read_headers({"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999",
                      "x-ratelimit-reset-requests": "12ms", "X-RateLimit-Limit-Tokens": "160000",
                      "x-ratelimit-remaining-tokens": "159976", "x-ratelimit-reset-tokens": "6m0s",
                      "x-ratelimit-remaining-tokens_usage_based": "10"}, NOW)
    req, tok = _one(r, "requests"), _one(r, "tokens")
    assert (req.source, req.limit, req.remaining, req.read_at) == ("openai", 5000, 4999, NOW)
    assert math.isclose(req.reset_at, NOW + 0.012)
    assert (tok.limit, tok.remaining, tok.reset_at) == (160000, 159976, NOW + 360)
    assert _one(r, "tokens-usage").remaining == 10
    assert not any(x.source == "openrouter" for x in r)     # OpenAI's names are not OpenRouter's


def test_openai_zero_remaining_is_exhausted_until_the_reset() -> None:
    r = _one(read_headers({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                           "x-ratelimit-reset-requests": "30s"}, NOW), "requests")
    assert r.left == 0.0 and r.exhausted(NOW) and r.exhausted(NOW + 29)
    assert not r.exhausted(NOW + 30) and r.stale(NOW + 30)
    assert blocked_until([r], NOW) == NOW + 30


def test_anthropic_api_key_windows() -> None:
    r = read_headers({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
                      "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:30Z",
                      "anthropic-ratelimit-input-tokens-limit": "40000",
                      "anthropic-ratelimit-input-tokens-remaining": "12000",
                      "anthropic-ratelimit-output-tokens-limit": "8000",
                      "anthropic-ratelimit-output-tokens-remaining": "8000"}, NOW)
    assert _one(r, "requests").reset_at == NOW + 30
    assert _one(r, "input-tokens").left == pytest.approx(0.3)
    assert tightest(r, NOW).window == "input-tokens"


def test_anthropic_subscription_windows_generically() -> None:
    r = read_headers({"anthropic-ratelimit-unified-status": "allowed_warning",
                      "anthropic-ratelimit-unified-5h-utilization": "0.42",
                      "anthropic-ratelimit-unified-5h-reset": str(int(NOW + 3600)),
                      "anthropic-ratelimit-unified-7d-utilization": "0.18",
                      "anthropic-ratelimit-unified-7d-reset": str(int(NOW + 86400)),
                      "anthropic-ratelimit-unified-7d_sonnet-utilization": "0.95",
                      "anthropic-ratelimit-unified-representative-claim": "five_hour"}, NOW)
    five = _one(r, "5h")
    assert (five.source, five.utilization, five.reset_at, five.length) == ("anthropic-unified", 0.42, NOW + 3600, 18000)
    assert five.left == pytest.approx(0.58)
    assert _one(r, "7d_sonnet").length == 7 * 86400
    assert tightest(r, NOW).window == "7d_sonnet"


def test_anthropic_rejected_status_alone_blocks_until_the_unified_reset() -> None:
    r = read_headers({"anthropic-ratelimit-unified-status": "rejected",
                      "anthropic-ratelimit-unified-reset": str(int(NOW + 600))}, NOW)
    assert blocked_until(r, NOW) == NOW + 600


def test_openrouter_epoch_milliseconds() -> None:
    r = _one(read_headers({"x-ratelimit-limit": "200", "x-ratelimit-remaining": "187",
                           "x-ratelimit-reset": str(int((NOW + 60) * 1000))}, NOW), "requests")
    assert (r.source, r.limit, r.remaining, r.reset_at) == ("openrouter", 200, 187, NOW + 60)


def test_ietf_structured_fields_and_the_older_draft() -> None:
    r = _one(read_headers({"RateLimit-Policy": '"default";q=100;w=60', "RateLimit": '"default";r=42;t=17'}, NOW),
             "default")
    assert (r.source, r.limit, r.remaining, r.reset_at, r.length) == ("ietf", 100, 42, NOW + 17, 60)
    old = _one(read_headers({"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "5"}, NOW),
               "requests")
    assert (old.limit, old.remaining, old.reset_at) == (100, 0, NOW + 5) and old.exhausted(NOW)


@pytest.mark.parametrize("headers", [
    {"x-ratelimit-remaining-requests": "1e290", "x-ratelimit-reset-requests": "1e290"},
    {"x-ratelimit-remaining-requests": "nan"}, {"x-ratelimit-remaining-requests": "-1"},
    {"x-ratelimit-remaining-requests": "sk-or-v1-" + "a" * 48},
    {"anthropic-ratelimit-unified-5h-utilization": "7"},        # a fraction above 1 is not a fraction
    {"anthropic-ratelimit-unified-5h-utilization": "inf"},
    {"RateLimit": '"x";r=abc;t=1e400'}, {"RateLimit": "\x1b]0;title\x07"},
    {"x-ratelimit-limit": "200"},                              # a limit alone says nothing
])
def test_broken_and_hostile_values_are_ignored(headers) -> None:
    assert read_headers(headers, NOW) == []


def test_a_broken_reset_keeps_the_amounts_but_no_time() -> None:
    r = _one(read_headers({"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "0",
                           "x-ratelimit-reset-requests": "1e290"}, NOW), "requests")
    assert r.reset_at is None and not r.exhausted(NOW)     # no time: never blocks a key
    assert blocked_until([r], NOW) is None


def test_a_reading_without_reset_goes_stale_after_its_window() -> None:
    r = _one(read_headers({"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "3"}, NOW),
             "requests")
    assert not r.stale(NOW + 59) and r.stale(NOW + 61)
    assert tightest([r], NOW + 61) is None


def test_openrouter_key_body_is_the_credits_window() -> None:
    [r] = read_openrouter_key({"data": {"limit": 10, "limit_remaining": 2.5, "usage": 7.5}}, NOW)
    assert (r.window, r.source, r.left) == ("credits", "openrouter-key", 0.25)
    assert read_openrouter_key({"data": {"limit": None}}, NOW) == []
    assert read_openrouter_key({"data": {"limit": "nan", "limit_remaining": 1}}, NOW) == []
    assert read_openrouter_key("garbage", NOW) == []


def test_codex_usage_windows() -> None:
    body = {"rate_limit": {"primary_window": {"used_percent": 38, "limit_window_seconds": 18000,
                                              "reset_after_seconds": 600},
                           "secondary_window": {"used_percent": 100, "reset_at": int(NOW + 7200)}},
            "additional_rate_limits": [{"limit_name": "codex_other",
                                        "rate_limit": {"primary_window": {"used_percent": "x"}}}]}
    r = read_codex_usage(body, NOW)
    assert [x.window for x in r] == ["session", "weekly"]
    assert _one(r, "session").reset_at == NOW + 600 and _one(r, "session").left == pytest.approx(0.62)
    assert _one(r, "weekly").exhausted(NOW) and blocked_until(r, NOW) == NOW + 7200


def test_a_threshold_yields_before_zero() -> None:
    r = _one(read_headers({"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "4",
                           "x-ratelimit-reset-requests": "20s"}, NOW), "requests")
    assert blocked_until([r], NOW) is None                    # default 0: Hermes's behaviour
    assert blocked_until([r], NOW, threshold=0.05) == NOW + 20


def test_sidecar_round_trip_and_forged_entries() -> None:
    r = _one(read_headers({"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "4",
                           "x-ratelimit-reset-requests": "20s"}, NOW), "requests")
    assert Reading.from_json(r.as_json(), NOW) == r
    assert Reading.from_json({**r.as_json(), "reset_at": 1e300}, NOW).reset_at is None
    assert Reading.from_json({**r.as_json(), "window": "\x1b[2J"}, NOW) is None
    assert Reading.from_json({**r.as_json(), "read_at": "nan"}, NOW) is None
    assert Reading.from_json([1, 2], NOW) is None


text = st.one_of(st.text(max_size=60), st.sampled_from(["0", "1e290", "nan", "inf", "-1", "6m0s", "12ms",
                                                        '"d";r=1;t=2', str(NOW), str(NOW * 1000)]))
names = st.sampled_from(["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
                         "x-ratelimit-remaining-tokens", "x-ratelimit-limit", "x-ratelimit-remaining",
                         "x-ratelimit-reset", "anthropic-ratelimit-unified-5h-utilization",
                         "anthropic-ratelimit-unified-5h-reset", "anthropic-ratelimit-unified-status",
                         "anthropic-ratelimit-unified-reset", "anthropic-ratelimit-tokens-remaining",
                         "ratelimit", "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset"])


@given(st.dictionaries(st.one_of(names, st.text(max_size=20)), text, max_size=8))
def test_any_headers_give_bounded_readings_and_never_raise(headers) -> None:
    for r in read_headers(headers, NOW):
        for v in (r.limit, r.remaining, r.utilization, r.reset_at, r.length):
            assert v is None or math.isfinite(v)
        assert r.left is None or 0.0 <= r.left <= 1.0
        assert r.reset_at is None or r.reset_at <= NOW + 366 * 86400
