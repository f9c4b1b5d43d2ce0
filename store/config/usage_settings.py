"""``usage:`` in hermes-admin.yaml: the usage ledger's bounds and the operator's own prices (#29)::

    usage:
      ledger: true               # false: the proxy keeps no ledger
      keep_requests: 7d          # per-request rows
      keep_hourly: 400d          # hourly roll-ups
      prices:                    # USD per million tokens, over the price table (contracts)
        gpt-4o-mini: {input: 0.15, output: 0.60, cache_read: 0.075}

Parsed strictly; every error names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store.config import fields

KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")


@dataclass(frozen=True)
class UsageSettings:
    ledger: bool = True
    keep_requests: float = 7 * 86400.0
    keep_hourly: float = 400 * 86400.0
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)   # model -> kind -> USD per Mtok


DEFAULTS = UsageSettings()


def parse(value: Any, path: Any) -> UsageSettings:
    """The ``usage:`` section (the defaults when absent)."""
    got = fields.section(value, "usage", path, ("ledger", "keep_requests", "keep_hourly", "prices"))
    models = fields.names(got.get("prices"), "usage.prices", path)
    prices = {}
    for model, body in models.items():
        where = f"usage.prices.{model}"
        kinds = fields.section(body, where, path, KINDS)
        prices[model] = {k: fields.usd(v, f"{where}.{k}", path) for k, v in kinds.items()}
    return UsageSettings(
        ledger=fields.switch(got.get("ledger", DEFAULTS.ledger), "usage.ledger", path),
        keep_requests=fields.duration(got.get("keep_requests", DEFAULTS.keep_requests), "usage.keep_requests",
                                      path, hi=3660 * 86400.0),
        keep_hourly=fields.duration(got.get("keep_hourly", DEFAULTS.keep_hourly), "usage.keep_hourly", path,
                                    hi=3660 * 86400.0),
        prices=prices)
