"""The provider dialects as data: one table test per family (auth form, base path, limits,
resets, usage), and the table of Hermes's provider ids."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from store import outside
from store.config.providers import KNOWN_PROVIDERS
from store.dialects import anthropic, codex, ietf, openai, registry
from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES, Credential
from store.dialects.readings import Usage, lowered

NOW = 1_800_000_000.0
TOKEN = "sk-test-dialect-" + "0" * 24


def cred(pool: str, base: str, path: str = "/v1/chat/completions", protocol: str = OPENAI, **kw) -> Credential:
    return Credential(TOKEN, pool, base, path, protocol, **kw)


# --- one row per family: (dialect, answer headers, body) -> what it reads -----------------------

FAMILIES = [
    pytest.param(openai.DIALECT, {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "0",
                                  "x-ratelimit-reset-requests": "6m0s"},
                 {"usage": {"prompt_tokens": 11, "completion_tokens": 7}},
                 ("requests", 0.0, NOW + 360), NOW + 360, Usage(11, 7), id="openai"),
    pytest.param(registry.DIALECTS["openrouter"], {"x-ratelimit-limit": "20", "x-ratelimit-remaining": "0",
                                                   "x-ratelimit-reset": str(int(NOW + 30) * 1000)},
                 {"usage": {"prompt_tokens": 5, "completion_tokens": 1}},
                 ("requests", 0.0, NOW + 30), NOW + 30, Usage(5, 1), id="openrouter"),
    pytest.param(anthropic.DIALECT, {"anthropic-ratelimit-requests-limit": "50",
                                     "anthropic-ratelimit-requests-remaining": "0",
                                     "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:45Z"},
                 {"usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 100,
                            "cache_creation_input_tokens": 9}},
                 ("requests", 0.0, 1_800_000_045.0), None, Usage(112, 2, 100, 9), id="anthropic"),  # 3 + 109 cached
    pytest.param(codex.DIALECT, {"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "250",
                                 "x-ratelimit-reset-tokens": "1s"},
                 {"usage": {"input_tokens": 40, "output_tokens": 4, "total_tokens": 44}},
                 ("tokens", 0.25, NOW + 1), NOW + 1, Usage(40, 4), id="codex"),
]


@pytest.mark.parametrize("dialect,headers,body,reading,reset,usage", FAMILIES)
def test_each_family_reads_its_own_limits_reset_and_usage(dialect, headers, body, reading, reset, usage) -> None:
    h = lowered(headers)
    got = dialect.readings(h, NOW)
    assert [(r.window, r.left, r.reset_at) for r in got] == [reading]
    assert dialect.reset(h, NOW, None) == reset
    assert dialect.usage(body) == usage
    assert dialect.usage({"choices": []}) is None      # an answer that says nothing of usage


def test_the_ietf_fields_read_by_every_dialect() -> None:
    h = lowered({"Retry-After": "12", "RateLimit": '"day";r=0;t=40', "RateLimit-Policy": '"day";q=1000;w=86400'})
    assert ietf.retry_after(h, NOW) == NOW + 12
    (r,) = ietf.readings(h, NOW)
    assert (r.window, r.limit, r.remaining, r.reset_at, r.length) == ("day", 1000, 0, NOW + 40, 86400)
    assert ietf.retry_after(lowered({"Retry-After": "Fri, 15 Jan 2027 08:00:45 GMT"}), NOW) == NOW + 45


@pytest.mark.parametrize("dialect,base,path,protocol,tail", [
    (openai.DIALECT, "https://api.openai.com/v1", "/v1/chat/completions", OPENAI, "/chat/completions"),
    (codex.DIALECT, "https://chatgpt.com/backend-api/codex", "/v1/responses", RESPONSES, "/responses"),
    (anthropic.DIALECT, "https://api.anthropic.com/v1", "/v1/messages", ANTHROPIC, "/messages"),
    (anthropic.DIALECT, "https://api.anthropic.com", "/v1/messages", ANTHROPIC, "/v1/messages"),
    # The bug: a base without /v1 lost it on the OpenAI-protocol paths (models.list() failed).
    (anthropic.DIALECT, "https://api.anthropic.com", "/v1/models", OPENAI, "/v1/models"),
    (anthropic.DIALECT, "https://api.anthropic.com", "/v1/chat/completions", OPENAI, "/v1/chat/completions"),
    (anthropic.DIALECT, "https://api.anthropic.com/v1/", "/v1/models", OPENAI, "/models"),
])
def test_each_family_puts_v1_where_its_endpoint_wants_it(dialect, base, path, protocol, tail) -> None:
    assert dialect.tail(protocol, base, path, "?x=1") == tail + "?x=1"


def test_each_family_attaches_the_credential_in_its_form() -> None:
    h = CIMultiDict({"Authorization": "Bearer client", "originator": "my-tool"})
    sent = openai.DIALECT.attach(h, cred("openrouter", "https://openrouter.ai/api/v1"))
    assert sent["Authorization"] == f"Bearer {TOKEN}"
    sent = anthropic.DIALECT.attach(CIMultiDict(), cred("anthropic", "https://api.anthropic.com", "/v1/messages",
                                                       ANTHROPIC))
    assert sent.get("x-api-key") == TOKEN and "Authorization" not in sent
    sent = anthropic.DIALECT.attach(CIMultiDict(), cred("anthropic", "https://api.anthropic.com", "/v1/models"))
    assert sent.get("x-api-key") == TOKEN          # Anthropic's own models list: the native form
    oauth = Credential("sk-ant-oat01-" + "x" * 30, "anthropic", "https://api.anthropic.com", "/v1/messages",
                       ANTHROPIC, client_beta="b1")
    sent = anthropic.DIALECT.attach(CIMultiDict(), oauth)
    assert sent["Authorization"].startswith("Bearer sk-ant-oat01-")
    assert sent["anthropic-beta"].split(",")[0] == "b1" and "oauth-2025-04-20" in sent["anthropic-beta"]
    sent = codex.DIALECT.attach(CIMultiDict({"originator": "my-tool"}),
                                cred("openai-codex", "https://chatgpt.com/backend-api/codex", "/v1/responses"))
    assert sent["originator"] == codex.ORIGINATOR and sent["Authorization"] == f"Bearer {TOKEN}"


# --- the table of Hermes's provider ids --------------------------------------------------------

def test_every_hermes_provider_id_has_a_row() -> None:
    assert set(registry.PROVIDERS) >= KNOWN_PROVIDERS


@pytest.mark.parametrize("pool,base,speaks,dialect", [
    ("openai-api", "https://api.openai.com/v1", False, "openai"),
    ("openai-codex", "https://chatgpt.com/backend-api/codex", False, "codex"),
    ("anthropic", "https://api.anthropic.com/v1", True, "anthropic"),
    ("openrouter", "https://openrouter.ai/api/v1", False, "openai"),
    ("custom:groq", "https://api.groq.com/openai/v1", False, "openai"),
    ("custom:minimax", "https://api.minimax.io/anthropic", True, "anthropic"),
    ("custom:cx", "https://chatgpt.com/backend-api/codex", False, "codex"),
])
def test_each_pool_speaks_its_dialect(pool, base, speaks, dialect) -> None:
    assert registry.dialect_for(pool, base, speaks).name == dialect


def test_openai_api_has_a_default_endpoint_and_speaks_responses() -> None:
    """The bug: ``openai-api`` (the id Hermes and ``hermes-admin add`` use) had neither."""
    assert registry.default_base("openai-api") == "https://api.openai.com/v1"
    assert registry.protocols("openai-api") == frozenset({OPENAI, RESPONSES})
    assert registry.default_base("custom:mine") is None and registry.protocols("custom:mine") is None


def test_only_an_aggregator_wraps_its_upstreams_429() -> None:
    assert registry.is_aggregator("openrouter")
    assert not registry.is_aggregator("openai-api") and not registry.is_aggregator("custom:x")


# --- hostile answers: every dialect reads anything without raising, and only bounded numbers --------

_NAMES = st.sampled_from(["retry-after", "ratelimit", "ratelimit-policy", "x-ratelimit-reset",
                          "x-ratelimit-remaining-requests", "x-ratelimit-limit-requests", "x-ratelimit-reset-requests",
                          "x-ratelimit-remaining", "anthropic-ratelimit-requests-remaining",
                          "anthropic-ratelimit-requests-reset", "anthropic-ratelimit-unified-5h-utilization",
                          "anthropic-ratelimit-unified-status", "anthropic-ratelimit-unified-reset"])
_VALUES = st.one_of(st.text(max_size=80), st.sampled_from(["1e309", "nan", "-1", "0", "1e12", "9" * 40, "6m0s",
                                                            "2027-01-15T08:01:30Z", '"a";r=-5;t=1e99', "rejected"]))
_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(st.sampled_from(["usage", "input_tokens",
                                                                              "prompt_tokens", "output_tokens"]),
                                                             inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_NAMES, _VALUES, max_size=6))
def test_hostile_headers_never_raise_and_every_time_is_bounded(headers) -> None:
    h = lowered(headers)
    for reading in registry.read_headers(headers, NOW):
        for v in (reading.limit, reading.remaining):
            assert v is None or (math.isfinite(v) and 0 <= v <= outside.MAX_COUNT)
        for v in (reading.reset_at, reading.length):
            assert v is None or (math.isfinite(v) and 0 <= v <= NOW + outside.MAX_AHEAD)
    for dialect in registry.DIALECTS.values():
        t = dialect.reset(h, NOW, None)
        assert t is None or (math.isfinite(t) and t <= NOW + outside.MAX_AHEAD)
    t = registry.header_reset(headers, NOW)
    assert t is None or (math.isfinite(t) and t <= NOW + outside.MAX_AHEAD)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_hostile_bodies_never_raise_and_usage_is_counts(data) -> None:
    for dialect in registry.DIALECTS.values():
        u = dialect.usage(data)
        assert u is None or all(v is None or (isinstance(v, int) and 0 <= v <= outside.MAX_COUNT)
                                for v in (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens))
