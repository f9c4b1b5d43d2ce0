"""Benchmark: the CPU time of the proxy's selection per request, in one run.

    .venv/bin/python bench/bench_select.py [--rows 4 1000] [--requests 3000] [--rounds 3] [--compare TREE]

For each pool size (``--rows``) and strategy (``fill_first``; ``round_robin`` with a
conversation per request, so the affinity pin is asked), the chain's work for one request is
timed: ``Chain.select`` and what the forwarder asks of the chain around the answer (the row's
auth type, the headroom ticket and readings, the 2xx's pin). Reported: this process's CPU
microseconds per request (other load on the machine barely moves it), and as a ratio to the
agent's own rule on the same rows (``policy.select``, worked out afresh each time), measured in
the same run. Also the status tick's ``Chain.states()`` (every row's eligibility, once a second,
on the event loop), in CPU milliseconds.

``--compare TREE`` runs the same measurements on another source tree's ``store`` (e.g.
``git archive <ref> store | tar -x -C /tmp/ref``), interleaved round by round, so a before and
after are read in one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if "--tree" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1])
sys.path.insert(1 if "--tree" in sys.argv else 0, str(ROOT))

from bench.pool_home import chain_of  # noqa: E402
from store.pools import policy  # noqa: E402
from store.proxy.routing.affinity import Conversation  # noqa: E402
from store.proxy.routing.chain import Chain  # noqa: E402
from store.proxy.routing.protocols import OPENAI, Want  # noqa: E402

STRATEGIES = ("fill_first", "round_robin")


def body(i: int) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "system", "content": "be brief"},
                                                   {"role": "user", "content": f"conversation {i % 64}"}],
                       "max_tokens": 8}).encode()


BODIES = [body(i) for i in range(64)]


def one_request(chain: Chain, i: int) -> None:
    raw = BODIES[i % 64]
    want = Want(OPENAI, raw)
    want.conversation = Conversation(OPENAI, raw)
    attempt = chain.select(want=want)
    sel = attempt.selection
    chain.row_count()
    chain.auth_type(sel)
    ticket = chain.headroom.sent(sel)
    chain.headroom.observe(sel, chain.headroom.read({}, chain.clock()), ticket)
    chain.headroom.done(ticket)
    chain.success(attempt)


def cpu_per(fn, n: int) -> float:
    c = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - c) / n * 1e6


def measure(rows: int, strategy: str, requests: int) -> dict[str, float]:
    """CPU microseconds per request's chain work, per ``policy.select`` on the same rows, and
    per ``Chain.states()``."""
    with tempfile.TemporaryDirectory() as tmp:
        chain = chain_of(Path(tmp), rows, strategy)
        for i in range(100):
            one_request(chain, i)
        chain_us = cpu_per(lambda i: one_request(chain, i), requests)
        mirror = [dict(r) for r in chain._rows["openrouter"]]
        now, ttls = time.time(), policy.DEFAULT_TTLS
        agent_us = cpu_per(lambda i: policy.select(mirror, strategy, now, ttls), max(20, requests // 10))
        states_us = cpu_per(lambda i: chain.states(), 20)
    return {"chain": chain_us, "agent": agent_us, "states": states_us}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[4, 1000])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", type=Path, metavar="TREE")
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)      # this run measures TREE's store
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    arms = [(rows, s) for rows in args.rows for s in STRATEGIES]
    if args.json:
        print(json.dumps({f"{r} {s}": measure(r, s, args.requests) for r, s in arms}))
        return 0
    best: dict[str, dict[str, dict[str, float]]] = {}

    def take(who: str, got: dict[str, dict[str, float]]) -> None:
        mine = best.setdefault(who, {})
        for arm, figs in got.items():
            old = mine.setdefault(arm, dict(figs))
            for k, v in figs.items():
                old[k] = min(old[k], v)

    for _ in range(args.rounds):
        take("this tree", {f"{r} {s}": measure(r, s, args.requests) for r, s in arms})
        if args.compare is not None:
            out = subprocess.run([sys.executable, __file__, "--tree", str(args.compare), "--json",
                                  "--requests", str(args.requests), "--rows", *map(str, args.rows)],
                                 capture_output=True, text=True, check=True).stdout
            take(f"{args.compare}", json.loads(out))
    print(f"CPU per request's chain work, best of {args.rounds} rounds of {args.requests}")
    for who, figs in best.items():
        print(f"  {who}:")
        for arm, f in figs.items():
            print(f"    {arm:<22} {f['chain']:9.1f} us/request  {f['chain'] / f['agent']:6.2f}x policy.select "
                  f"({f['agent']:.1f} us)   states() {f['states'] / 1000:7.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
