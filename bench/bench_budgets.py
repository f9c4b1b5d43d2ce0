"""Benchmark: the cost of the budget filter on the proxy's pick, in one run.

    .venv/bin/python bench/bench_budgets.py [--rows 100] [--picks 20000] [--rounds 3]
    .venv/bin/python bench/bench_budgets.py --rows 10000 --picks 500

A chain on a temporary home with one pool of ``--rows`` keys (``--strategy``), in this process;
``Chain.select`` (the pick every request makes, on the in-memory view) is timed with budgets
off, with a key budget no key has reached, and with half the keys over their budget and one
reserve key; interleaved over ``--rounds``, the best of each. Reported: CPU microseconds per
pick (this process's CPU time, so other load on the machine barely moves it) and wall
microseconds, each arm as a ratio to budgets off measured in the same run. The goal: budgets
on, half over with a reserve, within about 1.5x of off, at 1,000 and at 10,000 keys (the
budget state is worked out once per change of the tally, not per pick). Round robin renumbers
the pool's priorities on every pick, as Hermes does: a pick is linear in the pool's size
either way.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pool_home import chain_of  # noqa: E402
from store.config.budgets import Limits, PoolBudget  # noqa: E402
from store.proxy.routing.chain import Chain  # noqa: E402
from store.usage.record import ACTUAL, Spent  # noqa: E402


def per_pick(chain: Chain, picks: int) -> tuple[float, float]:
    """(CPU, wall) microseconds per ``Chain.select``."""
    c, t = time.process_time(), time.perf_counter()
    for _ in range(picks):
        chain.select()
    return (time.process_time() - c) / picks * 1e6, (time.perf_counter() - t) / picks * 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--picks", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--strategy", default="round_robin", choices=("round_robin", "fill_first", "least_used", "random"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        chain = chain_of(Path(tmp), args.rows, args.strategy)
        rules = chain.eligibility.budgets
        now = time.time()
        for i in range(0, args.rows, 2):      # half the keys have spent $1
            rules.tally(Spent(at=now, pool="openrouter", row_id=f"or{i:04d}", fingerprint=None,
                              cost_usd=1.0, cost_status=ACTUAL))
        modes = {"off": {},
                 "on, none over": {"openrouter": PoolBudget(key=Limits(day=100.0))},
                 "on, half over + reserve": {"openrouter": PoolBudget(key=Limits(day=1.0), reserve=("or0001",))}}
        cpu = {m: float("inf") for m in modes}
        wall = dict(cpu)
        for _ in range(args.rounds):
            for mode, budgets in modes.items():
                rules.budgets = budgets
                c, w = per_pick(chain, args.picks)
                cpu[mode], wall[mode] = min(cpu[mode], c), min(wall[mode], w)
    print(f"Chain.select on {args.rows} keys ({args.strategy}), best of {args.rounds} rounds of {args.picks} picks, "
          f"load average {os.getloadavg()[0]:.2f}")
    for mode in modes:
        print(f"  budgets {mode:<26} {cpu[mode]:9.2f} us CPU/pick  {cpu[mode] / cpu['off']:5.2f}x off   "
              f"{wall[mode]:9.2f} us wall  {wall[mode] / wall['off']:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
