"""How fast the agent runtime selects through the locked store (run by hand, not in CI).

    .venv/bin/python bench/bench_runtime.py [--procs 1 4] [--seconds 3] [--rows 8]

Each process runs PoolClient.select() (a full locked transaction: read, choose, count,
atomic write with fsync) in a loop on a temp home; prints selections per second and
checks that the store's request_count total equals the selections made.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.agent.pool_client import PoolClient  # noqa: E402
from store.authfile import atomic_write_bytes, ensure_home, read_store, serialize  # noqa: E402
from store.paths import Home  # noqa: E402


def _seed(home: Home, rows: int) -> None:
    ensure_home(home)
    pool = [{"id": f"r{i:05d}", "label": f"key-{i}", "auth_type": "api_key", "priority": i,
             "source": "manual", "access_token": f"sk-bench-{i:032d}", "last_status": None,
             "last_status_at": None, "last_error_code": None, "last_error_reason": None,
             "last_error_message": None, "last_error_reset_at": None, "request_count": 0}
            for i in range(rows)]
    atomic_write_bytes(home.auth, serialize({"version": 1, "providers": {},
                                             "credential_pool": {"openrouter": pool}}))
    home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n")


def _worker(root: str, seconds: float, out: mp.Queue) -> None:
    client = PoolClient(Home(Path(root)), "openrouter", env={})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client.select()
    out.put(client.selections)


def run(procs: int, seconds: float, rows: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        _seed(home, rows)
        q: mp.Queue = mp.Queue()
        ps = [mp.Process(target=_worker, args=(str(home.root), seconds, q)) for _ in range(procs)]
        t0 = time.monotonic()
        for p in ps:
            p.start()
        made = sum(q.get(timeout=seconds + 60) for _ in ps)
        for p in ps:
            p.join(timeout=10)
        elapsed = time.monotonic() - t0
        doc = read_store(home).doc or {}
        counted = sum(r["request_count"] for r in doc["credential_pool"]["openrouter"])
        return {"procs": procs, "rows": rows, "selections": made, "counted": counted,
                "per_second": round(made / elapsed, 1), "lost": made - counted}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rows", type=int, default=8)
    args = ap.parse_args()
    for n in args.procs:
        print(json.dumps(run(n, args.seconds, args.rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
