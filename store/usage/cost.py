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

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from genai_prices import Usage as TableUsage
from genai_prices import calc_price

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


class Pricer:
    """Prices answers; the price table's lookups are cached per (provider, model) (a
    lookup costs ~0.1 ms: this runs on the feed's thread, never the event loop)."""

    def __init__(self, prices: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.prices = dict(prices or {})
        self.version = prices_version()
        self._models: dict[tuple[str | None, str], Any] = {}
        self._flat: dict[tuple[str | None, str], dict[str, float | None]] = {}   # plain per-Mtok prices

    def cost(self, pool: str, model: str | None, usage: Usage | None, *, oauth: bool = False) -> Cost:
        """The :class:`Cost` of one answer of *pool* on *model* that reported *usage*."""
        if oauth or pool in SUBSCRIPTION_POOLS:
            return Cost(None, INCLUDED)
        if usage is not None and usage.cost_usd is not None:
            return Cost(usage.cost_usd, ACTUAL)
        if usage is None or model is None or (usage.input_tokens is None and usage.output_tokens is None):
            return Cost(None, UNKNOWN)
        own = self.prices.get(model)
        if own is not None:
            return Cost(by_rates(own, usage), ESTIMATED, SETTINGS_VERSION)
        key = (PROVIDERS.get(pool), model)
        found = self._model(*key)
        if found is None:
            return Cost(None, UNKNOWN)
        rates = self._flat.get(key)
        if rates is not None and (rates.get("cache_write") is not None or not usage.cache_write_tokens) \
                and (rates.get("cache_read") is not None or not usage.cache_read_tokens):
            return Cost(by_rates({k: v for k, v in rates.items() if v is not None and k != "reasoning"}, usage),
                        ESTIMATED, self.version)
        try:
            got = found.calc_price(TableUsage(input_tokens=usage.input_tokens or 0,
                                              output_tokens=usage.output_tokens or 0,
                                              cache_read_tokens=usage.cache_read_tokens or 0,
                                              cache_write_tokens=usage.cache_write_tokens or 0))
            usd = float(got["total_price"])
        except (ArithmeticError, ValueError, TypeError, KeyError):
            return Cost(None, UNKNOWN)
        return Cost(usd, ESTIMATED, self.version) if math.isfinite(usd) and usd >= 0 else Cost(None, UNKNOWN)

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
