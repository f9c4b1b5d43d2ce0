"""Benchmark: the usage ledger's write per row with the adapter for None it registers, against
the sqlite3 module's own handling of None (the adapter taken out), in one run.

    .venv/bin/python bench/bench_ledger_nulls.py [--rows 500] [--rounds 9]

A row as the proxy writes it for an answer of an unpriced model (the cost, the cache and
reasoning counts unknown: five None parameters of fifteen), in batches of *rows* (about what
half a second of a busy proxy gathers), through :func:`store.usage.ledger.write_rows` on a
ledger in a temporary folder. The two ways alternate batch by batch; each figure is the
median of the rounds, in CPU microseconds a row (``time.process_time``).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store.usage import ledger  # noqa: E402 - registers the adapter

KEY = (type(None), sqlite3.PrepareProtocol)
OWN = "sqlite3's own"


def rows(n: int, at: float) -> list[tuple]:
    return [(at + i * 1e-3, "openrouter", "or0001", "sk-or-…a1B2", "fake-model", "openai", "openrouter:fake-model",
             12, 30, None, None, None, None, "unknown", 0) for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    adapter = sqlite3.adapters[KEY]
    with tempfile.TemporaryDirectory() as tmp:
        conn = ledger.open_ledger(Path(tmp) / "usage.sqlite", write=True)
        at = time.time()
        for _ in range(2):                 # every statement prepared once, both ways
            ledger.write_rows(conn, rows(args.rows, at))
            at += 1
        got: dict[str, list[float]] = {"adapter": [], OWN: []}
        for r in range(args.rounds):
            for way in (("adapter", OWN) if r % 2 == 0 else (OWN, "adapter")):
                if way == "adapter":
                    sqlite3.adapters[KEY] = adapter
                else:
                    sqlite3.adapters.pop(KEY, None)
                batch = rows(args.rows, at)
                at += 1
                t0 = time.process_time()
                ledger.write_rows(conn, batch)
                got[way].append((time.process_time() - t0) / args.rows * 1e6)
        sqlite3.adapters[KEY] = adapter
        conn.close()
    print(f"{args.rows} rows a batch, {args.rounds} rounds; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    med = {way: statistics.median(v) for way, v in got.items()}
    for way, v in got.items():
        print(f"  {way:<14} {med[way]:.2f} us a row (rounds: {' '.join(f'{x:.2f}' for x in v)})")
    print(f"  adapter / {OWN}: {med['adapter'] / med[OWN]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
