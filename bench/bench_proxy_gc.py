"""Benchmark: what the cyclic GC costs the proxy per request, with Python's young-generation
threshold (700) and with the proxy's (:data:`store.proxy.loop.GC_YOUNG`), side by side.

    .venv/bin/python bench/bench_proxy_gc.py [--count 3000]

Two hermes-admin proxies on the bench's home (bench/bench_proxy.py), one loopback fake
provider; each proxy's collections are timed in its own process (bench/proxy_gc_timed.py:
``gc.callbacks``, thread CPU time), so the figure is the collections' own cost, not a
difference of two noisy CPU totals. For c1, c16 and a stream: microseconds of collection a
request, and collections of each generation per 1,000 requests.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import KEYS, PY, run_load, start_fake, start_ours, stop_all, wait_until  # noqa: E402


def sums(proc, out: Path) -> dict:
    out.unlink(missing_ok=True)
    os.kill(proc.pid, signal.SIGUSR2)
    wait_until(lambda: out.exists() and out.read_text().strip(), 10, "the GC sums")
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; {args.count} requests per measurement; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tmp = Path(tempfile.mkdtemp(prefix="ha-gc-"))
    procs = []
    try:
        fake, upstream = start_fake(tmp)
        procs.append(fake)
        targets = []
        for young in ("700", "default"):
            out = tmp / f"gc-{young}.json"
            proc, url = start_ours(tmp, upstream, name=f"young-{young}",
                                   wrap=[PY, str(ROOT / "bench" / "proxy_gc_timed.py"), str(out), young])
            procs.append(proc)
            targets.append((young, proc, url, out))
        print(f"{'young threshold':>16} {'kind':>7} {'GC us/request':>14}  collections per 1,000 (gen 0, 1, 2)")
        for kind in ("c1", "c16", "stream"):
            for young, proc, url, out in targets:
                run_load(url, KEYS[0], 16, count=300, stream=kind == "stream")       # warm
                a = sums(proc, out)
                run_load(url, KEYS[0], 1 if kind == "c1" else 16, count=args.count, stream=kind == "stream")
                b = sums(proc, out)
                us = (b["seconds"] - a["seconds"]) / args.count * 1e6
                per = [round(1000 * (y - x) / args.count, 1) for x, y in zip(a["collections"], b["collections"],
                                                                             strict=True)]
                label = young if young != "default" else "hermes-admin's"
                print(f"{label:>16} {kind:>7} {us:14.2f}  {per}", flush=True)
                time.sleep(0.2)
    finally:
        stop_all(procs, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
