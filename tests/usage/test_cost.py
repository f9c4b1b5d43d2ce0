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


# -- the exact plan: a table price's own calc_price without its per-answer set-up --------

def _table(provider: str, model: str):
    """The table's price of *model* at *provider* (ids as genai-prices names them), as of now."""
    from datetime import UTC, datetime

    from genai_prices.data_snapshot import get_snapshot

    now = datetime.now(tz=UTC)
    return next(m.get_prices(now) for p in get_snapshot().providers if p.id == provider for m in p.models
                if m.id == model)


def _calc(found, u: Usage) -> float | None:
    """What the Pricer made of an answer before the plan: the table's own calc_price."""
    from genai_prices import Usage as TableUsage

    try:
        got = float(found.calc_price(TableUsage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                                                cache_read_tokens=u.cache_read_tokens or 0,
                                                cache_write_tokens=u.cache_write_tokens or 0))["total_price"])
    except ValueError:
        return None
    return got


def _agrees(plan: cost.Exact, found, u: Usage) -> bool:
    """The plan gives the very number calc_price gives (None only where calc_price refuses)."""
    want = _calc(found, u)
    got = plan.total(u)
    return (None if got is None else float(got)) == want


# Not flat (tiers, a price per other unit, a 1-hour cache write): before the plan, every answer
# of these went through calc_price. The last two are flat: their plan must agree as well.
PLANNED = [("anthropic", "claude-sonnet-4-5"), ("openrouter", "anthropic/claude-sonnet-4.5"),
           ("anthropic", "claude-3-5-haiku-latest"), ("google", "gemini-2.5-pro"), ("google", "gemini-2.5-flash"),
           ("perplexity", "sonar"), ("openrouter", "perplexity/sonar-deep-research"),
           ("openai", "gpt-4o-mini"), ("deepseek", "deepseek-chat")]
_FOUND = {m: _table(*m) for m in PLANNED}
_COUNTS = st.one_of(st.integers(0, 10**7), st.sampled_from([0, 1, 199_999, 200_000, 200_001, 272_000, 1_000_000]))


@given(model=st.sampled_from(PLANNED), inp=_COUNTS, out=_COUNTS, read=_COUNTS, write=_COUNTS)
def test_the_plan_prices_as_the_tables_own_calc_price_to_the_last_bit(model, inp, out, read, write) -> None:
    found = _FOUND[model]
    plan = cost.exact_plan(found)
    assert plan is not None
    u = Usage(inp, out, min(read, inp), min(write, max(0, inp - read)) if write % 3 else write)
    assert _agrees(plan, found, u)


def test_every_price_of_the_table_has_a_plan_that_agrees() -> None:
    from datetime import UTC, datetime

    from genai_prices.data_snapshot import get_snapshot

    now = datetime.now(tz=UTC)
    prices = [m.get_prices(now) for p in get_snapshot().providers for m in p.models]
    assert len(prices) > 1000
    usages = [Usage(0, 0), Usage(5, 3), Usage(1200, 300, 800, 100, 120), Usage(250_000, 4000, 10_000, 5000),
              Usage(10, 5, 8, 8), Usage(200_000, 1), Usage(200_001, 1, 200_001)]
    for found in prices:
        plan = cost.exact_plan(found)
        assert plan is not None, found
        assert all(_agrees(plan, found, u) for u in usages), found


def test_a_plan_off_by_one_at_a_tier_is_caught() -> None:
    """Negative control: the comparison above sees a tier taken one token early."""
    found = _FOUND[("anthropic", "claude-sonnet-4-5")]
    plan = cost.exact_plan(found)
    assert plan is not None and any(term[6] for term in plan.terms)
    off = cost.Exact(tuple((*t[:6], tuple((start - 1, p) for start, p in t[6]), t[7]) for t in plan.terms))
    at_tier = Usage(200_000, 1000, 50_000)
    assert _agrees(plan, found, at_tier)
    assert not _agrees(off, found, at_tier)
    swapped = cost.Exact((plan.terms[1], plan.terms[0], *plan.terms[2:]))   # another order of the same terms
    assert _agrees(swapped, found, Usage(5, 3))          # the order matters only where rounding does


def test_a_tiered_price_is_priced_by_its_plan_not_by_calc_price(monkeypatch) -> None:
    from genai_prices.types import ModelPrice

    p = Pricer()
    u = Usage(250_000, 300, 800, 100, 120)
    want = p.cost("anthropic", "claude-sonnet-4-5", u)
    assert want.status == ESTIMATED and want.usd == _calc(_FOUND[("anthropic", "claude-sonnet-4-5")], u)

    def refuse(*_a, **_k):
        raise AssertionError("calc_price called per answer")

    monkeypatch.setattr(ModelPrice, "calc_price", refuse)
    assert p.cost("anthropic", "claude-sonnet-4-5", u) == want
    assert p.cost("anthropic", "claude-sonnet-4-5", Usage(10, 5, cache_read_tokens=-1)) == cost.Cost(None, UNKNOWN)
    # Control: what the plan leaves to calc_price (cache reads and writes beyond the input,
    # which it refuses: unknown) does reach it.
    odd = Usage(10, 5, 8, 8)
    with pytest.raises(AssertionError, match="per answer"):
        p.cost("anthropic", "claude-sonnet-4-5", odd)
    monkeypatch.undo()
    assert p.cost("anthropic", "claude-sonnet-4-5", odd) == cost.Cost(None, UNKNOWN)


def test_a_price_the_table_would_refuse_or_warn_of_has_no_plan() -> None:
    """Left to calc_price, which refuses (unknown) or warns of it: the plan never prices
    what the table would not (control: the same price made valid has a plan)."""
    from decimal import Decimal

    from genai_prices.types import ModelPrice, Tier, TieredPrices

    d = Decimal
    good = ModelPrice(input_mtok=d(1), output_mtok=d(2))
    assert cost.exact_plan(good) is not None
    for bad in (ModelPrice(input_mtok=d(-1), output_mtok=d(2)), ModelPrice(input_mtok=d("NaN"), output_mtok=d(2)),
                ModelPrice(input_mtok=d(1), output_mtok=d(2), bogus_mtok=d(1)),
                ModelPrice(input_mtok=TieredPrices(d(1), [Tier(-1, d(2))]), output_mtok=d(2)),
                ModelPrice(cache_read_mtok=d(1)),       # a cache read without the input price above it
                ModelPrice(input_mtok=1.0, output_mtok=d(2))):
        assert cost.exact_plan(bad) is None, bad
    tiers = ModelPrice(input_mtok=TieredPrices(d(1), [Tier(100, d(2)), Tier(200, d(3))]), output_mtok=d(2))
    plan = cost.exact_plan(tiers)
    assert plan is not None and _agrees(plan, tiers, Usage(150, 7)) and _agrees(plan, tiers, Usage(250, 7))
