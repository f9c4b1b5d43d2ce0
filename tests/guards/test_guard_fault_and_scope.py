"""Two guards of whose fault a 429 is, each with the mistake as its negative control
(tests/mutant.py):

- an aggregator's wrapped upstream 429 ("Provider returned error") is the route's fault on
  any pool whose answer carries the upstream's metadata, and on OpenRouter without it; on any
  other pool without metadata it is the key's (an ``or`` made ``and`` benches healthy keys);
- a 429 that says a usage or plan limit is spent benches the whole row, not one model, even on
  an Anthropic pool whose rate limits are per model (without that condition, the spent key
  keeps serving every other model).
"""

from __future__ import annotations

import types

import pytest

from store.agent import judge, outcomes
from tests.mutant import mutant

WRAPPED = "Provider returned error"
META = {"raw": '{"error": {"message": "Rate limit exceeded"}}', "provider_name": "DeepSeek"}


def check_wrapped_fault_by_pool(mod: types.ModuleType) -> None:
    def fault(pool: str, metadata):
        return mod.classify(mod.Result(429, message=WRAPPED, metadata=metadata), pool=pool).fault
    for pool in ("openrouter", "custom:my-aggregator", "nous", "openai-api"):
        assert fault(pool, META) == mod.ROUTE, pool                  # metadata names the upstream
    assert fault("openrouter", None) == mod.ROUTE                   # OpenRouter's own wording
    for pool in ("custom:my-aggregator", "nous", "openai-api"):
        assert fault(pool, None) == mod.KEY, pool                   # no sign of an upstream: the key's
    assert fault("openrouter", {"provider_name": "x"}) == mod.ROUTE


def test_a_wrapped_upstream_429_is_the_routes_fault_on_every_pool_that_shows_the_upstream() -> None:
    check_wrapped_fault_by_pool(outcomes)


@pytest.mark.parametrize("old,new", [
    ("return is_aggregator(pool) or (", "return is_aggregator(pool) and ("),
    ("return is_aggregator(pool) or (", "return not is_aggregator(pool) and ("),
])
def test_control_the_wrapped_rule_with_its_or_turned_is_seen(old: str, new: str) -> None:
    with pytest.raises(AssertionError):
        check_wrapped_fault_by_pool(mutant("store.agent.outcomes", old, new))


USAGE_LIMITS = [
    "The usage limit has been reached for your plan.",
    "You have reached your plan limit for claude-sonnet-4. Try again later.",
    "Usage limit reached for this organization.",
]


def check_usage_limit_benches_the_row(mod: types.ModuleType) -> None:
    model = "claude-sonnet-4"
    for message in USAGE_LIMITS:
        result = outcomes.Result(429, reason="rate_limit_error", message=message)
        verdict = outcomes.classify(result, pool="anthropic")
        assert verdict.fault == outcomes.KEY
        assert not mod.model_scoped(result, verdict, model, per_model_429=True), message
        assert not mod.model_scoped(result, verdict, model, per_model_429=False), message
    # the per-model rule itself still holds, so the test is about the usage-limit condition
    plain = outcomes.Result(429, reason="rate_limit_error", message="Number of requests has exceeded your rate limit.")
    assert mod.model_scoped(plain, outcomes.classify(plain, pool="anthropic"), model, per_model_429=True)


def test_a_usage_or_plan_limit_benches_the_whole_row_not_one_model() -> None:
    check_usage_limit_benches_the_row(judge)


def test_control_without_the_usage_limit_condition_only_the_model_is_benched() -> None:
    wrong = mutant("store.agent.judge", " or is_usage_limit(result)", "")
    with pytest.raises(AssertionError):
        check_usage_limit_benches_the_row(wrong)


def test_unchanged_copies_pass_both_checks() -> None:
    """The controls above are worth something only if a copy WITHOUT the mistake passes."""
    same = "from __future__ import annotations"
    check_wrapped_fault_by_pool(mutant("store.agent.outcomes", same, same))
    check_usage_limit_benches_the_row(mutant("store.agent.judge", same, same))
