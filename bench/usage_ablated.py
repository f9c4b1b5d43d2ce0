"""hermes-admin's CLI with the usage ledger's writes taken out (for bench/bench_usage.py --ablate).

    .venv/bin/python bench/usage_ablated.py proxy --home HOME --port 0

The ledger still listens, queues each answer's row and wakes its thread every round, which
takes each batch off the queue; only the transaction (``store.usage.ledger.write_rows``) is a
no-op. So the proxy's figures with the ledger on, against these, are what the SQLite writes
cost, and these against the ledger off what queuing and the thread cost. A measurement,
never a way to run: nothing is recorded.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.usage import ledger  # noqa: E402


def _nothing(conn: object, rows: list[tuple]) -> None:
    """The batch taken off the queue and not written."""


ledger.write_rows = _nothing

from tui.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.argv[0] = "hermes-admin"
    raise SystemExit(main())
