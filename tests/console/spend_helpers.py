"""A usage ledger for the console's spend tests (#29): rows written as the proxy writes them."""

from __future__ import annotations

import sqlite3
from typing import Any

from store.paths import Home
from store.usage.ledger import ledger_path, open_ledger, write_batch
from store.usage.record import Spent
from tests.tui_sample import NOW

# Today in the frozen clock's UTC day (NOW is 00:00 UTC: answers just after it).
TODAY = NOW + 1


def spent(pool: str, rid: str, cost: float | None, status: str, *, at: float = TODAY, **tokens: Any) -> Spent:
    return Spent(at, pool, rid, "sk-or-…TEST", "m", "/chat/completions", None,
                 tokens.get("input", 100), tokens.get("output", 20), tokens.get("cache_read", 50),
                 tokens.get("cache_write", 0), tokens.get("reasoning", 5), cost, status)


def seed_ledger(home: Home, rows: list[Spent]) -> None:
    """Write *rows* into the home's ledger (the ledger's own batch writer)."""
    conn = open_ledger(ledger_path(home.root), write=True)
    try:
        write_batch(conn, rows)
    finally:
        conn.close()


def raw_rows(home: Home, rows: list[tuple[Any, ...]]) -> None:
    """Insert *rows* as they are (any SQLite value): what no writer of ours makes."""
    seed_ledger(home, [])
    conn = sqlite3.connect(ledger_path(home.root))
    try:
        conn.executemany("INSERT INTO requests (at, pool, row_id, fingerprint, model, endpoint, route, "
                         "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
                         "reasoning_tokens, cost_usd, cost_status, partial) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.commit()
    finally:
        conn.close()


async def spend_read(app: Any, pilot: Any) -> None:
    """Have the dashboard read the ledger now, and wait for the figures (bounded by Textual)."""
    app.dashboard.spend.poll()
    await app.workers.wait_for_complete()
    await pilot.pause()
