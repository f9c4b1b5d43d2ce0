"""What it costs the console to follow a live proxy, per second, on the demo home.

The proxy rewrites its status file every second. Two ways for the console to follow it:
- poll: read the file from a one-second timer (``tui.services.proxy_feed.live_status``: one glob,
  one small JSON parse, one ``kill(pid, 0)``), what the dashboard and the panel do;
- wake: add the file to the store watcher's filter, so each rewrite wakes the console,
  which re-reads the home (``store.watch.home.HomeLoader.load``: auth.json, config.yaml, .env).

Both measured in this run on the same home and status file, CPU time per second of idle:

    .venv/bin/python bench/bench_proxy_feed.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from store.authfile import atomic_write_bytes, ensure_home, serialize
from store.paths import Home
from store.proxy.observing.stats import BUCKETS, write_status
from store.watch.home import HomeLoader
from tui.demo.launch import config_yaml, seed_store
from tui.services import proxy_feed


def _status(now: float) -> dict:
    creds = [{"pool": "openrouter", "id": f"r{i}", "label": f"k{i}", "in_flight": 1,
              "requests_per_minute": 12} for i in range(8)]
    pools = {p: {"bucket_seconds": 10, "requests": list(range(BUCKETS)), "rate_limited": [0] * BUCKETS}
             for p in ("openrouter", "openai-codex", "anthropic", "custom:together.ai")}
    return {"pid": os.getpid(), "port": 8645, "url": "http://127.0.0.1:8645/v1", "state": "running",
            "started_at": now, "updated_at": now, "primary": "openai-codex", "active": "openrouter",
            "on_fallback_since": now, "next_restore_check": now + 10, "chain": [], "in_flight": 8,
            "credentials": creds, "pools": pools, "requests_total": 1000}


def _cpu_per_call(fn, rounds: int) -> float:
    fn()
    start = time.process_time()
    for _ in range(rounds):
        fn()
    return (time.process_time() - start) / rounds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=2000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        ensure_home(home)
        now = time.time()
        atomic_write_bytes(home.auth, serialize(seed_store("http://127.0.0.1:9", now)))
        atomic_write_bytes(home.config, config_yaml("http://127.0.0.1:9").encode())
        write_status(home, _status(now))
        loader = HomeLoader(home)
        poll = _cpu_per_call(lambda: proxy_feed.summary(proxy_feed.live_status(home)), args.rounds)
        wake = _cpu_per_call(lambda: loader.load({"auth.json"}), max(50, args.rounds // 10))
    print(f"poll the status file (1/s):      {poll * 1e6:8.1f} µs CPU per second")
    print(f"wake on it via the store watcher: {wake * 1e6:8.1f} µs CPU per second (a home reload)")
    print(f"ratio wake/poll: {wake / poll:.1f}x  (idle CPU of the poll: {poll * 100:.4f} % of one core)")


if __name__ == "__main__":
    main()
