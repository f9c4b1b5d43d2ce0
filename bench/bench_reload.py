"""What one written row costs the console's reader, at 6, 1,000 and 10,000 credentials.

    .venv/bin/python bench/bench_reload.py        # about 30 s; prints, never asserts

The console's watcher thread turns each write into a new state: re-read auth.json,
rebuild the views of what changed, diff the events, and learn the home's secrets. Here
another writer (store.transaction, as Hermes writes) renames one row, and the same
HomeLoader + HomeSecrets the console runs process it. For each size it prints the median
and p95 over 30 writes, and the same with the whole-file path forced (every read parsed
and checked whole, every view and the redactor rebuilt: what a reload cost before
store/store_index.py), side by side in this one run. The ratio to the 6-credential
figure is what to compare: a reload's cost should follow the write, not the home.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tui import make_home  # noqa: E402

from store.redaction import redact  # noqa: E402
from store.transaction import transaction  # noqa: E402
from store.watch.home import HomeLoader  # noqa: E402

WRITES = 30


def _whole(loader: HomeLoader) -> None:
    """Force the whole-file path: a fresh reader and view cache before each load."""
    from store.store_index import StoreReader
    from store.watch.pool_cache import PoolCache
    loader._reader = StoreReader(loader.home)
    loader._cache = PoolCache()


def measure(home_dir: Path, n: int, whole: bool, grow: bool = False) -> list[float]:
    """*grow*: each write makes the row's request_count one digit longer (a live agent's
    counts and timestamps change length), so every later value's byte offset moves."""
    home = make_home(home_dir, n, pools=min(20, n))
    loader = HomeLoader(home)
    loader.load(None)
    secrets = redact.HomeSecrets()
    out = []
    for i in range(WRITES):
        with transaction(home) as doc:
            row = doc["credential_pool"]["pool00"][0]
            if grow:
                row["request_count"] = 10 ** (i % 15)
            else:
                row["label"] = f"w{i:03d}-bench"
        if whole:
            _whole(loader)
            secrets = redact.HomeSecrets()
        t0 = time.perf_counter()
        state = loader.load({"auth.json"})
        secrets.redactor(state.doc, None, state.env).redact("warm the index sk-none")
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hermes-admin-bench-reload-"))
    print(f"python {sys.version.split()[0]}, one write of one row, {WRITES} writes per figure")
    print(f"{'credentials':>12} {'path':>12} {'p50 ms':>8} {'p95 ms':>8} {'p95 / p95(6)':>13}")
    base: dict[str, float] = {}
    for n in (6, 1000, 10000):
        for path, whole, grow in (("incremental", False, False), ("grows", False, True),
                                  ("whole file", True, False)):
            lat = measure(tmp / f"h{n}-{path}", n, whole, grow)
            p95 = pct(lat, 0.95)
            base.setdefault(path, p95)
            print(f"{n:>12,} {path:>12} {statistics.median(lat):8.2f} {p95:8.2f} {p95 / base[path]:12.1f}x")


if __name__ == "__main__":
    main()
