"""The console's fleet feed: how soon a bench published by another host reaches the view.

    .venv/bin/python bench/bench_fleet_view.py [--n 60] [--interval 2]

Starts a real redis-server on a free loopback port (temp dir, no persistence) and runs
the fleet view's feed loop (tui.services.fleet_feed.FleetLink.run, on a thread, as the view's
worker runs it). Another host's client then benches or resets a key N times; each change
is timed from the mark call to the feed posting a FleetUpdate that shows it.

Baseline from the same run: the same loop with pub/sub switched off (a snapshot every
--interval seconds only), which sees a change after U(0, interval); each change
is made at a random point of the poll cycle. Prints figures and
the ratio; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store.fleet.client import FleetClient, connect  # noqa: E402
from store.paths import Home  # noqa: E402
from tui.services.fleet_feed import FleetConfig, FleetLink, FleetUpdate  # noqa: E402

FP = "ab" * 32


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _silent(client: FleetClient) -> object:
    ps = client.r.pubsub(ignore_subscribe_messages=True)
    ps.subscribe(client.k("bench-silence"))
    return ps


def measure(url: str, home: Home, n: int, interval: float, pubsub: bool) -> list[float]:
    link = FleetLink(FleetConfig(url=url, host="console", interval=interval), home)
    if not pubsub:
        # Subscribed to a channel nobody publishes on: only the interval wakes the feed.
        link.client.pubsub = lambda: _silent(link.client)  # type: ignore[method-assign]
    updates: queue.Queue[FleetUpdate] = queue.Queue()
    stop = threading.Event()
    feed = threading.Thread(target=link.run, args=(stop, lambda m: updates.put(m)
                                                   if isinstance(m, FleetUpdate) else None))
    feed.start()
    other = FleetClient(connect(url), "host-b")
    other.clear(FP)
    updates.get(timeout=10)
    out = []
    try:
        for i in range(n):
            bench = i % 2 == 0
            # Changes come at random times, not just after a poll: wait U(0, interval) first.
            time.sleep(random.uniform(0, interval))
            t0 = time.perf_counter()
            if bench:
                other.mark(FP, until_in=600, code=429, reason="rate_limit_exceeded")
            else:
                other.clear(FP)
            want = "exhausted" if bench else "ok"
            while True:
                msg = updates.get(timeout=interval * 3 + 5)
                state = next((k.state for k in msg.snapshot.keys if k.state.fp == FP), None)
                if state is not None and state.status == want:
                    out.append(time.perf_counter() - t0)
                    break
    finally:
        stop.set()
        feed.join(timeout=10)
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--interval", type=float, default=2.0)
    args = ap.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-view-"))
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        r = connect(url)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if r.ping():
                    break
            except Exception:
                time.sleep(0.05)
        home = Home(tmp / "home")
        live = measure(url, home, args.n, args.interval, pubsub=True)
        poll = measure(url, home, args.n, args.interval, pubsub=False)
        print(f"fleet view feed, {args.n} changes from another host, interval {args.interval:g} s")
        for name, xs in (("pub/sub + poll (the view)", live), ("poll only (baseline)", poll)):
            print(f"  {name:<26} p50 {statistics.median(xs) * 1000:7.1f} ms   "
                  f"p99 {pct(xs, 99) * 1000:7.1f} ms   n={len(xs)}")
        print(f"  ratio p50 baseline/view: {statistics.median(poll) / statistics.median(live):.0f}x")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
