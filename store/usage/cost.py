"""What one answer cost, and how that is known (#29), as Hermes labels it:

- ``included``: a subscription login (an OAuth row: Claude, ChatGPT/Codex, Nous); its
  window use is shown instead of dollars;
- ``actual``: the provider reported the cost (OpenRouter's ``usage.cost``);
- ``estimated``: the operator's own price for the model (``usage.prices`` in
  hermes-admin.yaml, version ``settings``), else the pinned ``genai-prices`` table (its
  version kept beside every estimate, :attr:`Spent.prices_version`);
- ``unknown``: none of these; the cost is None, never 0.

:func:`store.usage.money.money` is the one formatter: a sub-cent cost never renders as ``$0.00``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from genai_prices import Usage as TableUsage
from genai_prices import calc_price
from genai_prices.data_units import unit_data
from genai_prices.decompose import is_descendant_or_self
from genai_prices.types import ModelPrice, TieredPrices
from genai_prices.units import UnitRegistry
from genai_prices.validation import validate_priced_units

from store.dialects.readings import Usage
from store.usage.money import SETTINGS_VERSION, prices_version
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, UNKNOWN

SUBSCRIPTION_POOLS = frozenset({"openai-codex"})     # every row is a ChatGPT login
# hermes-admin pool id -> genai-prices provider id (others: matched by the model's name).
PROVIDERS = {"openai-api": "openai", "openai": "openai", "anthropic": "anthropic", "openrouter": "openrouter",
             "xai": "x-ai", "deepseek": "deepseek", "gemini": "google", "fireworks": "fireworks",
             "novita": "novita", "minimax": "minimax", "zai": "zai", "arcee": "arcee"}
_CACHE_CAP = 4096
_FLAT_FIELDS = frozenset({"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "web_searches_kcount",
                          "storage_searches_kcount"})
MTOK = 1_000_000.0


@dataclass(frozen=True)
class Cost:
    usd: float | None
    status: str
    version: str | None = None


_INCLUDED, _UNKNOWN = Cost(None, INCLUDED), Cost(None, UNKNOWN)      # frozen: one of each serves every answer


class Pricer:
    """Prices answers; the price table's lookups are cached per (provider, model) (a
    lookup costs ~0.1 ms: this runs on the feed's thread, never the event loop), and so is
    how each model's price is worked out: plain rates in floats (:func:`flat_rates`), else
    the table's own arithmetic without its per-answer set-up (:class:`Exact`), else the
    table's ``calc_price`` itself."""

    def __init__(self, prices: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.prices = dict(prices or {})
        self.version = prices_version()
        self._models: dict[tuple[str | None, str], Any] = {}
        self._flat: dict[tuple[str | None, str], dict[str, float | None]] = {}   # plain per-Mtok prices
        # (pool, model) -> (table price or None, rates for by_rates or None, whether a cache
        # write / a cache read has its own rate, the exact plan or None): one lookup an answer
        self._plans: dict[tuple[str, str], tuple[Any, dict[str, float] | None, bool, bool, Exact | None]] = {}

    def cost(self, pool: str, model: str | None, usage: Usage | None, *, oauth: bool = False) -> Cost:
        """The :class:`Cost` of one answer of *pool* on *model* that reported *usage*."""
        if oauth or pool in SUBSCRIPTION_POOLS:
            return _INCLUDED
        if usage is None:
            return _UNKNOWN
        if usage.cost_usd is not None:
            return Cost(usage.cost_usd, ACTUAL)
        if model is None or (usage.input_tokens is None and usage.output_tokens is None):
            return _UNKNOWN
        own = self.prices.get(model)
        if own is not None:
            return Cost(by_rates(own, usage), ESTIMATED, SETTINGS_VERSION)
        plan = self._plans.get((pool, model))
        if plan is None:
            plan = self._plan(pool, model)
        found, rates, has_write, has_read, exact = plan
        if found is None:
            return _UNKNOWN
        if rates is not None and (has_write or not usage.cache_write_tokens) \
                and (has_read or not usage.cache_read_tokens):
            return Cost(by_rates(rates, usage), ESTIMATED, self.version)
        try:
            total = exact.total(usage) if exact is not None else None
            if total is None:
                total = found.calc_price(TableUsage(input_tokens=usage.input_tokens or 0,
                                                    output_tokens=usage.output_tokens or 0,
                                                    cache_read_tokens=usage.cache_read_tokens or 0,
                                                    cache_write_tokens=usage.cache_write_tokens or 0))["total_price"]
            usd = float(total)
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return _UNKNOWN
        return Cost(usd, ESTIMATED, self.version) if math.isfinite(usd) and usd >= 0 else _UNKNOWN

    def _plan(self, pool: str, model: str) -> tuple[Any, dict[str, float] | None, bool, bool, Exact | None]:
        key = (PROVIDERS.get(pool), model)
        found = self._model(*key)
        flat = self._flat.get(key)
        rates = None if flat is None else {k: v for k, v in flat.items() if v is not None and k != "reasoning"}
        plan = (found, rates, flat is not None and flat.get("cache_write") is not None,
                flat is not None and flat.get("cache_read") is not None, None if found is None else exact_plan(found))
        if len(self._plans) >= _CACHE_CAP:
            self._plans.clear()
        self._plans[(pool, model)] = plan
        return plan

    def _model(self, provider: str | None, model: str) -> Any:
        key = (provider, model)
        if key in self._models:
            return self._models[key]
        try:
            found = calc_price(TableUsage(input_tokens=1), model[:200], provider_id=provider).model_price
        except (LookupError, ValueError, TypeError):
            found = None
        if found is None and provider is not None:       # the provider lacks it: by the model's name
            try:
                found = calc_price(TableUsage(input_tokens=1), model[:200]).model_price
            except (LookupError, ValueError, TypeError):
                found = None
        if len(self._models) >= _CACHE_CAP:
            self._models.clear()
            self._flat.clear()
        self._models[key] = found
        flat = flat_rates(found)
        if flat is not None:
            self._flat[key] = flat
        return found


def flat_rates(found: Any) -> dict[str, float | None] | None:
    """A table price as plain USD per million tokens by kind, when it is only that (no
    tiers, no price per request or per other unit that applies to a text answer): priced
    then in microseconds by :func:`by_rates`, the same sum the table's own ``calc_price``
    makes (a test holds the two equal). None: the table's ``calc_price`` must price it."""
    prices = vars(found) if hasattr(found, "__dict__") else None
    if not isinstance(prices, dict) or not set(prices) <= _FLAT_FIELDS:
        return None
    out: dict[str, float | None] = {}
    for kind, name in (("input", "input_mtok"), ("output", "output_mtok"), ("cache_read", "cache_read_mtok"),
                       ("cache_write", "cache_write_mtok")):
        v = prices.get(name)
        if v is not None and not isinstance(v, Decimal):
            return None          # tiered
        out[kind] = None if v is None else float(v)
    return out if out["input"] is not None and out["output"] is not None else None


def by_rates(rates: Mapping[str, float], usage: Usage) -> float:
    """USD for *usage* at *rates* (USD per million tokens by kind; a cache kind without its
    own rate is charged as input; reasoning, part of output, at its own rate when set)."""
    inp, out = usage.input_tokens or 0, usage.output_tokens or 0
    read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
    plain_in = max(0, inp - read - write)
    base = rates.get("input", 0.0)
    total = plain_in * base + read * rates.get("cache_read", base) + write * rates.get("cache_write", base)
    reasoning = min(out, usage.reasoning_tokens or 0) if "reasoning" in rates else 0
    total += (out - reasoning) * rates.get("output", 0.0) + reasoning * rates.get("reasoning", 0.0)
    return total / MTOK


# The usage fields a price-table Usage is given (cost() passes these four, 0 for None).
_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_Term = tuple[int, int, int, int, int, Decimal, tuple[tuple[int, Decimal], ...], int]


class Exact:
    """A table price's own ``calc_price`` (genai-prices' ``ModelPrice.calc_price``) for an
    answer of the four token counts :meth:`Pricer.cost` gives it, without its per-answer
    set-up (resolving and validating the priced units, a table Usage, the leaf counts by
    unit dimensions: ~0.15 ms an answer on a tiered price). Worked out once per price
    (:func:`exact_plan`): each priced unit's count is a fixed integer combination of the
    four counts, its price the base or the tier the input reaches. Per answer: the same
    Decimal operations in the same order as the table's (each unit's price times its count,
    over its ``per``, added to a running total from ``Decimal(0)``), so the total is the
    same number (a test holds the two equal over generated usages and the whole table)."""

    __slots__ = ("terms",)

    def __init__(self, terms: tuple[_Term, ...]) -> None:
        self.terms = terms

    def total(self, usage: Usage) -> Decimal | None:
        """The table's ``total_price`` for *usage*; None where only the table's own
        ``calc_price`` knows (a count that is not a plain int >= 0, a negative leaf count:
        it raises there)."""
        inp, out = usage.input_tokens or 0, usage.output_tokens or 0
        read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
        if not (type(inp) is int and type(out) is int and type(read) is int and type(write) is int) \
                or inp < 0 or out < 0 or read < 0 or write < 0:
            return None
        total = Decimal(0)
        for const, a, b, c, d, base, tiers, per in self.terms:
            n = const + a * inp + b * out + c * read + d * write
            if n < 0:
                return None
            price = base
            for start, tier in tiers:          # the highest first, as the table looks
                if inp > start:
                    price = tier
                    break
            total += price * Decimal(n) / per
        return total


@functools.cache
def _units() -> UnitRegistry:
    """The table's unit registry (as genai-prices builds its own), made once."""
    return UnitRegistry(unit_data)


def _valid(price: object) -> bool:
    """A price the table takes: a finite Decimal >= 0, or tiers of such from starts (ints
    >= 0) that never go down (what its calc_price checks on every call)."""
    if isinstance(price, TieredPrices):
        starts = [t.start for t in price.tiers]
        return _valid(price.base) and all(type(s) is int and s >= 0 for s in starts) \
            and starts == sorted(starts) and all(_valid(t.price) for t in price.tiers)
    return isinstance(price, Decimal) and price.is_finite() and price >= 0


def exact_plan(found: Any) -> Exact | None:
    """The :class:`Exact` plan of the table price *found*, or None when it cannot be one
    (anything the table would refuse, warn of or infer beyond the four counts: its
    ``calc_price`` then prices, or refuses, each answer itself)."""
    try:
        if type(found) is not ModelPrice:
            return None
        registry = _units()
        # The priced units in the order the table takes them (the price's own attributes).
        resolved = []
        for key, price in vars(found).items():
            if key.startswith("_") or price is None:
                continue
            if not _valid(price):
                return None
            resolved.append((registry.unit_for_price_key(key), price))      # KeyError: not a unit it knows
        validate_priced_units(tuple(unit for unit, _ in resolved), registry)
        # A unit priced beyond the four counts is read as 0 unless the table would infer it
        # (or refuse to) from them: ask it with all four set (fewer set: 0 all the more).
        probe = TableUsage(**dict.fromkeys(_FIELDS, 1))
        units = {unit.usage_key: unit for unit, _ in resolved if unit.usage_key != "requests"}
        for key in units:
            if key not in _FIELDS and getattr(probe, key) != 0:
                return None
        # Each unit's leaf count (the table's compute_leaf_values, over symbols): its own
        # count less its priced descendants' leaves, the most specific units first.
        leaves: dict[str, tuple[int, ...]] = {}
        ordered = sorted(units.values(), key=lambda u: (-len(u.dimensions), u.usage_key))
        for unit in ordered:
            own = [0, 0, 0, 0, 0]
            if unit.usage_key in _FIELDS:
                own[1 + _FIELDS.index(unit.usage_key)] = 1
            for other in ordered:
                if other is not unit and is_descendant_or_self(unit, other):
                    own = [x - y for x, y in zip(own, leaves[other.usage_key], strict=True)]
            leaves[unit.usage_key] = tuple(own)
        terms: list[_Term] = []
        for unit, price in resolved:
            coef = (1, 0, 0, 0, 0) if unit.usage_key == "requests" else leaves[unit.usage_key]
            if isinstance(price, TieredPrices):
                base, tiers = price.base, tuple((t.start, t.price) for t in reversed(price.tiers))
            else:
                base, tiers = price, ()
            if type(unit.per) is not int:
                return None
            terms.append((*coef, base, tiers, unit.per))          # type: ignore[arg-type]
        return Exact(tuple(terms))
    except (AttributeError, LookupError, ValueError, TypeError, ArithmeticError):
        return None
