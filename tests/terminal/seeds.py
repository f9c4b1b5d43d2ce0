"""Homes the real-terminal tests act on."""

from __future__ import annotations

import time

from store.paths import Home
from tests.conftest import make_row, make_store, write_store


def primary_and_benched_backup(home: Home, key_a: str, key_b: str) -> float:
    """An openrouter pool of two keys: ``aaaaaa`` "primary", usable, and ``bbbbbb`` "backup",
    benched for half an hour after a 429. Returns when it was written."""
    now = time.time()
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label="primary", priority=0, token=key_a),
        make_row("bbbbbb", label="backup", priority=1, token=key_b, last_status="exhausted",
                 last_status_at=now - 60, last_error_code=429, last_error_reason="rate_limit_exceeded",
                 last_error_reset_at=now + 1800),
    ]}))
    return now
