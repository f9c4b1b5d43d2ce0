"""The one value an answer's usage becomes, and the ledger's file and table.

A :class:`Spent` is made once per upstream answer (streamed or not) from the verdict of
:mod:`store.agent.judge` and handed to every listener (the ledger, the budgets' tally, the
metrics, the fleet's counters). It holds no secret: the row's id and fingerprint only.
"""

from __future__ import annotations

from dataclasses import dataclass

from store.frozen import quick_init

LEDGER_FILE = "hermes-admin-usage.sqlite"

# How a cost is known (as Hermes's own agent/usage_pricing.py labels it).
ACTUAL, ESTIMATED, INCLUDED, UNKNOWN = "actual", "estimated", "included", "unknown"
COST_STATUSES = (ACTUAL, ESTIMATED, INCLUDED, UNKNOWN)
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")

# The per-request table: every reader (the usage verb, the monitor's budget rule) and the
# writer agree on it. Roll-ups and indexes are the ledger's own.
REQUESTS_TABLE = """CREATE TABLE IF NOT EXISTS requests (
    at REAL NOT NULL, pool TEXT NOT NULL, row_id TEXT, fingerprint TEXT, model TEXT,
    endpoint TEXT, route TEXT, input_tokens INTEGER, output_tokens INTEGER,
    cache_read_tokens INTEGER, cache_write_tokens INTEGER, reasoning_tokens INTEGER,
    cost_usd REAL, cost_status TEXT NOT NULL, partial INTEGER NOT NULL DEFAULT 0)"""


@quick_init
@dataclass(frozen=True)
class Spent:
    """What one answer cost one key. Token counts are None where the answer did not say;
    ``cost_usd`` is None unless ``cost_status`` is actual or estimated; ``partial`` marks a
    stream cut short (what it saw is recorded).

    Built by :func:`store.frozen.quick_init` (the fields set in the instance's dict at once,
    not one frozen ``object.__setattr__`` a field: ~1 us instead of ~3.5 us; one is made per
    relayed answer, on the usage feed's thread)."""

    at: float
    pool: str
    row_id: str | None
    fingerprint: str | None
    model: str | None = None
    endpoint: str | None = None
    route: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    cost_status: str = UNKNOWN
    prices_version: str | None = None
    partial: bool = False

