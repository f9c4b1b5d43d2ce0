"""Honest cost (#29): actual, estimated (with the price table's version), included, unknown;
a sub-cent cost never shows as $0.00."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.dialects.readings import Usage
from store.usage import cost
from store.usage.cost import Pricer
from store.usage.money import money
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, UNKNOWN

U = Usage(1000, 500, 200)


def test_the_four_statuses() -> None:
    p = Pricer()
    assert p.cost("openrouter", "openai/gpt-4o", Usage(10, 5, cost_usd=0.00042)) == cost.Cost(0.00042, ACTUAL)
    est = p.cost("openai-api", "gpt-4o", U)
    # 800 plain input at $2.5/M, 200 cached at $1.25/M, 500 output at $10/M
    assert est.status == ESTIMATED and est.version == "0.2.3" and est.usd == pytest.approx(0.00725)
    assert p.cost("anthropic", "claude-sonnet-4-5", U, oauth=True) == cost.Cost(None, INCLUDED)
    assert p.cost("openai-codex", "gpt-5-codex", U) == cost.Cost(None, INCLUDED)
    assert p.cost("custom:lab", "our-own-model-7b", U) == cost.Cost(None, UNKNOWN)
    assert p.cost("openai-api", "gpt-4o", None) == cost.Cost(None, UNKNOWN)      # no usage: no estimate


def test_the_operators_prices_win_over_the_table() -> None:
    p = Pricer({"gpt-4o": {"input": 1.0, "output": 2.0, "cache_read": 0.5}})
    got = p.cost("openai-api", "gpt-4o", U)
    assert got == cost.Cost(pytest.approx((800 * 1.0 + 200 * 0.5 + 500 * 2.0) / 1e6), ESTIMATED, "settings")
    assert Pricer().cost("openai-api", "gpt-4o", U).usd != got.usd      # control: the table's own price differs


def test_reasoning_at_its_own_rate_only_when_set() -> None:
    u = Usage(0, 100, reasoning_tokens=40)
    assert cost.by_rates({"output": 10.0}, u) == pytest.approx(100 * 10 / 1e6)
    assert cost.by_rates({"output": 10.0, "reasoning": 1.0}, u) == pytest.approx((60 * 10 + 40 * 1) / 1e6)


@pytest.mark.parametrize(("usd", "status", "text"), [
    (1.234, ACTUAL, "$1.23"), (0.004235, ACTUAL, "$0.004235"), (0.0000421, ACTUAL, "$0.00004210"),
    (None, UNKNOWN, "—"), (None, INCLUDED, "incl."), (0.12, ESTIMATED, "~$0.12"), (0.0, ACTUAL, "$0"),
])
def test_money(usd, status, text) -> None:
    assert money(usd, status) == text


def test_an_estimate_names_its_price_table() -> None:
    assert money(0.5, ESTIMATED, "0.2.3") == "~$0.50 est. genai-prices 0.2.3"
    assert money(0.5, ESTIMATED, "settings") == "~$0.50 est. your prices"


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False, exclude_min=True))
def test_a_positive_cost_never_renders_as_zero(usd) -> None:
    text = money(usd, ACTUAL)
    assert text not in ("$0.00", "$0", "$0.0") and text.startswith(("$", "<$"))
    if usd >= 1e-9 and "<" not in text:
        assert math.isclose(float(text[1:].replace(",", "")), usd, rel_tol=0.01, abs_tol=0.006)


@pytest.mark.parametrize(("pool", "model"), [("openai-api", "gpt-4o"), ("openai-api", "gpt-4o-mini"),
                                             ("openrouter", "openai/gpt-4o"), ("deepseek", "deepseek-chat"),
                                             ("anthropic", "claude-sonnet-4-5"), ("openai-api", "o3-mini")])
@given(inp=st.integers(0, 10**6), out=st.integers(0, 10**6), read=st.integers(0, 10**6))
def test_the_fast_path_prices_as_the_tables_own_calc_price(pool, model, inp, out, read) -> None:
    from genai_prices import Usage as TableUsage
    from genai_prices import calc_price

    u = Usage(inp + read, out, read)
    got = _PRICER.cost(pool, model, u)
    want = float(calc_price(TableUsage(input_tokens=inp + read, output_tokens=out, cache_read_tokens=read), model,
                            provider_id=cost.PROVIDERS.get(pool)).total_price)
    assert got.status == ESTIMATED and got.usd == pytest.approx(want, rel=1e-9, abs=1e-12)


_PRICER = Pricer()


def test_the_fast_path_is_taken_for_plain_prices_only() -> None:
    p = Pricer()
    p.cost("openai-api", "gpt-4o", U)
    p.cost("anthropic", "claude-sonnet-4-5", U)
    assert ("openai", "gpt-4o") in p._flat                       # noqa: SLF001 - the cache under test
    assert ("anthropic", "claude-sonnet-4-5") not in p._flat     # noqa: SLF001 - tiered: the table prices it
