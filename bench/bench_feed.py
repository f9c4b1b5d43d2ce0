"""Benchmark: the CPU the proxy's usage feed spends per relayed answer, off the event loop.

    .venv/bin/python bench/bench_feed.py [--answers 20000] [--rounds 7] [--batch 32] [--compare TREE]
                                         [--scenario bench|actual|flat|tiered|all]

One :class:`store.usage.feed.UsageFeed` with the proxy's listeners in the proxy's order
(``store/proxy/observing/spend.py``, ``store/proxy/forward.py``): the ledger on a temporary
home, the Prometheus counters (:class:`UsageCounters`), the budgets' tally. Answers are
handed over as the proxy does (``Spend.hand_over``: a batch of ``--batch`` answers, about
20 ms of them at concurrency 16, then the feed's thread wakes once), ``--answers`` a round.
Measured per round, from ``/proc/self/task/<tid>/schedstat`` (nanoseconds on a CPU): the
feed's thread (pricing, the :class:`Spent`, every listener) and the ledger's writer thread
(its SQLite batches), each per answer.

Scenarios (what each answer says):

- ``bench``: what ``bench/bench_proxy.py``'s proxy relays: pool ``openrouter``, keys b0-b3,
  model ``fake-model`` (not in the price table: cost unknown), the fake provider's usage
  (5 prompt, 3 completion tokens);
- ``actual``: OpenRouter reporting its cost (``tui/demo/fake_usage.py``'s spend: 1200 input
  with 800 cached and 100 written, 300 output with 120 reasoning, $0.0125);
- ``flat``: a plain-priced table model (``openai-api`` ``gpt-4o-mini``), usage varied;
- ``tiered``: a model the table prices in tiers (``anthropic`` ``claude-sonnet-4-5``), usage varied.

``--compare TREE``: the same rounds in a second process whose ``store`` is TREE's (a
``git archive`` of the tree before a change), the two processes taking turns round by
round (each first in turn); printed per scenario: each tree's median us per answer, and
the per-round ratio (this tree / TREE) as median, IQR and range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = ("bench", "actual", "flat", "tiered")


def worker(tree: Path, answers: int, batch: int) -> None:
    """Rounds on request: a scenario's name on stdin, one JSON line of its figures out."""
    sys.path.insert(0, str(tree))
    import store
    from store.dialects.readings import Usage
    from store.proxy.observing.metrics import UsageCounters
    from store.usage.cost import Pricer
    from store.usage.feed import UsageFeed
    from store.usage.ledger import Ledger, ledger_path
    from store.usage.tally import Tally
    assert Path(store.__file__).resolve().is_relative_to(tree.resolve()), store.__file__

    def usages(name: str) -> tuple[str, str, list]:
        if name == "bench":
            return "openrouter", "fake-model", [Usage(5, 3)]
        if name == "actual":
            return "openrouter", "fake-model", [Usage(1200, 300, 800, 100, 120, 0.0125)]
        varied = [Usage(1000 + i * 37, 50 + i * 11 % 700, (i * 53) % 900, 0, (i * 7) % 40) for i in range(97)]
        if name == "flat":
            return "openai-api", "gpt-4o-mini", varied
        return "anthropic", "claude-sonnet-4-5", varied

    tmp = Path(tempfile.mkdtemp(prefix="bench-feed-"))
    feeds = {}
    for name in SCENARIOS:
        home = tmp / name
        home.mkdir(mode=0o700)
        feed = UsageFeed(Pricer({}))
        ledger = Ledger(ledger_path(home), keep_requests=7 * 86400.0, keep_hourly=400 * 86400.0)
        feed.listen(ledger)
        feed.listen(UsageCounters())
        feed.listen(Tally())
        feeds[name] = (feed, ledger, *usages(name))

    def cpu(tid: int) -> float:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9

    def drive(name: str, n: int) -> None:
        feed, ledger, pool, model, us = feeds[name]
        fps = [f"sk-or-v1-…{i:04x}" for i in range(4)]
        for start in range(0, n, batch):
            for i in range(start, min(n, start + batch)):
                k = i % 4
                feed.answer(pool, f"b{k}", fps[k], us[i % len(us)], model=model, endpoint="openai",
                            route=pool, oauth=False, partial=False)
            assert feed.wait_idle(30)

    def settle(ledger) -> None:
        deadline = time.monotonic() + 30
        while ledger.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.6)          # the writer's last batch committed (it flushes every 0.5 s)

    for name in SCENARIOS:       # warm: the price table loaded, the threads started, the ledgers made
        drive(name, 200)
        settle(feeds[name][1])
    for line in sys.stdin:
        name = line.strip()
        feed, ledger, *_ = feeds[name]
        ft, lt = feed._thread.native_id, ledger._thread.native_id   # noqa: SLF001 - the threads measured
        f0, l0 = cpu(ft), cpu(lt)
        drive(name, answers)
        settle(ledger)
        f1, l1 = cpu(ft), cpu(lt)
        print(json.dumps({"feed": (f1 - f0) / answers * 1e6, "writer": (l1 - l0) / answers * 1e6,
                          "threads": threading.active_count()}), flush=True)


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.3f}x"
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"{q2:.3f}x (IQR {q1:.3f}-{q3:.3f}, range {min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=20_000, help="answers a round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=32, help="answers a hand-over (the proxy's 20 ms at c16)")
    ap.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    ap.add_argument("--compare", type=Path, metavar="TREE", help="another checkout's store, measured in turn")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.answers, args.batch)
        return 0
    trees = {"this": HERE.parent}
    if args.compare is not None:
        trees["compare"] = args.compare.resolve()
    procs = {name: subprocess.Popen([sys.executable, __file__, "--worker", str(tree), "--answers", str(args.answers),
                                     "--batch", str(args.batch)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True, cwd=tree)
             for name, tree in trees.items()}
    scenarios = SCENARIOS if args.scenario == "all" else (args.scenario,)
    got: dict[tuple[str, str], list[dict]] = {(t, s): [] for t in trees for s in scenarios}
    print(f"{args.rounds} rounds of {args.answers} answers, hand-overs of {args.batch}; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; trees: "
          + ", ".join(f"{k}={v}" for k, v in trees.items()), flush=True)
    try:
        for r in range(args.rounds):
            for s in scenarios:
                order = list(trees) if r % 2 == 0 else list(reversed(trees))
                for t in order:
                    p = procs[t]
                    p.stdin.write(s + "\n")
                    p.stdin.flush()
                    got[(t, s)].append(json.loads(p.stdout.readline()))
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait(60)
    print("us of CPU per answer (median over rounds; feed = the feed's thread: pricing and every listener; "
          "writer = the ledger's thread)")
    for s in scenarios:
        line = f"  {s:7}"
        for t in trees:
            rs = got[(t, s)]
            line += (f"  {t}: feed {statistics.median(r['feed'] for r in rs):6.2f} "
                     f"writer {statistics.median(r['writer'] for r in rs):6.2f}")
        print(line)
        if "compare" in trees:
            for fig in ("feed", "writer"):
                ratio = [a[fig] / b[fig] for a, b in zip(got[("this", s)], got[("compare", s)], strict=True)]
                print(f"           {fig} this/compare {spread(ratio)}; per round "
                      + " ".join(f"{x:.3f}" for x in ratio))
    print(f"load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
