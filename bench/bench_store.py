"""Cost of one hermes-admin store write, against the bare locked read-replace cycle.

    .venv/bin/python bench/bench_store.py [--n 500] [--writers 8] [--updates 2000]

1. Latency: one ``store.transaction`` that increments one row's request_count on a
   50-row store, and the same change done by hand with nothing of ours in the way
   (flock on auth.lock, read + json.loads, json.dumps, mkstemp + write + fsync +
   os.replace + directory fsync, unlock). Both run N times, interleaved in rounds
   (alternating which goes first) so drift in the machine hits both alike.
2. Throughput: W writer processes each doing their share of a fixed number of
   increments, released together; updates/s over the wall time, for both variants.
   The final count is checked, so a fast-but-wrong variant would show.

Prints figures and a markdown table for the README; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store.paths import Home  # noqa: E402
from store.transaction import transaction  # noqa: E402

POOL = "openrouter"
ROWS = 50


def make_store(home: Home) -> None:
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    rows = []
    for i in range(ROWS):
        rows.append({
            "id": f"{i:06x}", "label": f"key-{i}", "auth_type": "api_key", "priority": i,
            "source": "manual", "access_token": f"sk-or-v1-bench{i:04d}" + "0" * 48,
            "last_status": None, "last_status_at": None, "last_error_code": None,
            "last_error_reason": None, "last_error_message": None, "last_error_reset_at": None,
            "request_count": 0,
        })
    doc = {"version": 1, "providers": {}, "credential_pool": {POOL: rows}}
    home.auth.write_bytes(json.dumps(doc, indent=2).encode())
    os.chmod(home.auth, 0o600)


def ours(home: Home) -> None:
    with transaction(home) as doc:
        doc["credential_pool"][POOL][0]["request_count"] += 1


def bare(home: Home) -> None:
    """The minimum a correct writer must do, with nothing of hermes-admin's."""
    lock_fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        with open(home.auth, "rb") as fh:
            doc = json.loads(fh.read())
        doc["credential_pool"][POOL][0]["request_count"] += 1
        data = json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=home.root)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, home.auth)
        dir_fd = os.open(home.root, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
        os.close(lock_fd)


VARIANTS: dict[str, Callable[[Home], None]] = {"ours": ours, "bare": bare}


def count(home: Home) -> int:
    return json.loads(home.auth.read_bytes())["credential_pool"][POOL][0]["request_count"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency(home: Home, n: int) -> dict[str, list[float]]:
    for _ in range(20):                      # warm caches and imports
        ours(home)
        bare(home)
    times: dict[str, list[float]] = {"ours": [], "bare": []}
    order = ["ours", "bare"]
    for i in range(n):
        for name in (order if i % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            VARIANTS[name](home)
            times[name].append(time.perf_counter() - t0)
    return times


def _writer(root: str, name: str, share: int, go: mp.Event) -> None:  # type: ignore[valid-type]
    home = Home(Path(root))
    fn = VARIANTS[name]
    go.wait(30)
    for _ in range(share):
        fn(home)


def throughput(home: Home, name: str, writers: int, updates: int) -> tuple[float, bool]:
    ctx = mp.get_context("fork")
    go = ctx.Event()
    share = updates // writers
    start_count = count(home)
    procs = [ctx.Process(target=_writer, args=(str(home.root), name, share, go)) for _ in range(writers)]
    for p in procs:
        p.start()
    time.sleep(0.3)                         # let every writer reach the start line
    t0 = time.perf_counter()
    go.set()
    for p in procs:
        p.join(120)
    elapsed = time.perf_counter() - t0
    exact = count(home) == start_count + share * writers
    return share * writers / elapsed, exact


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500, help="rounds of the latency test (default 500)")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--updates", type=int, default=2000, help="total increments in the throughput test")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="hermes-admin-bench-") as tmp:
        home = Home(Path(tmp) / "hermes")
        make_store(home)
        size = home.auth.stat().st_size
        times = latency(home, args.n)
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        p95 = {k: pct(v, 0.95) * 1000 for k, v in times.items()}
        ratio = med["ours"] / med["bare"]
        tput = {k: throughput(home, k, args.writers, args.updates) for k in ("ours", "bare")}

    print(f"# store benchmark: {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}")
    print(f"# store: {ROWS} rows, {size / 1024:.1f} KiB; latency n={args.n} each, interleaved; "
          f"throughput: {args.writers} processes x {args.updates // args.writers} updates")
    print()
    print("| | median | p95 | 8-process throughput |")
    print("|---|---:|---:|---:|")
    for name, title in (("ours", "`store.transaction` (lock, fresh read, backup, atomic write)"),
                        ("bare", "bare flock + read + mkstemp/fsync/replace")):
        rate, exact = tput[name]
        print(f"| {title} | {med[name]:.2f} ms | {p95[name]:.2f} ms | "
              f"{rate:,.0f} updates/s{'' if exact else ' (LOST UPDATES)'} |")
    print()
    print(f"ratio of medians (ours / bare): {ratio:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
