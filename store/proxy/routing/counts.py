"""Request counts the proxy writes behind: counted in memory per request, written to the
store at most once a second in one transaction for the whole batch.

A batch that could not be written (the lock held by a Hermes refresh, a store that became
unreadable) is kept for the next flush: no count is lost, and no request waits for the
store. The in-memory view adds what is pending to the rows it reads, so a count never
goes back while it waits.
"""

from __future__ import annotations

import threading

from store.model import Row, as_int, pool_rows, row_by_id
from store.paths import Home
from store.transaction import skip_write, transaction


class PendingCounts:
    """Counts per (pool, row id) not yet in the store. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], int] = {}
        self.counted = 0                  # selections counted (written or pending)

    def add(self, pool: str, row_id: str) -> None:
        key = (pool, row_id)
        with self._lock:
            self._pending[key] = self._pending.get(key, 0) + 1
            self.counted += 1

    def apply(self, rows_by_pool: dict[str, list[Row]]) -> None:
        """Add what is pending to freshly read rows (a view being replaced)."""
        with self._lock:
            items = list(self._pending.items())
        for (pool, rid), n in items:
            row = row_by_id(rows_by_pool.get(pool) or (), rid)
            if row is not None:
                row["request_count"] = as_int(row.get("request_count")) + n

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def total(self) -> int:
        with self._lock:
            return sum(self._pending.values())

    def flush(self, home: Home, lock_timeout: float) -> int:
        """Write pending counts in one transaction; returns how many were written."""
        with self._lock:
            batch, self._pending = self._pending, {}
        if not batch:
            return 0
        try:
            with transaction(home, lock_timeout=lock_timeout) as doc:
                written = 0
                for (pool, rid), n in batch.items():
                    row = row_by_id(pool_rows(doc, pool), rid)
                    if row is not None:
                        row["request_count"] = as_int(row.get("request_count")) + n
                        written += n
                if not written:
                    skip_write()
        except BaseException:
            with self._lock:     # keep them for the next flush; nothing is lost
                for key, n in batch.items():
                    self._pending[key] = self._pending.get(key, 0) + n
            raise
        return written
