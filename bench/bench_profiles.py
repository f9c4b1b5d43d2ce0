"""What a root of profiles costs the store layer, against one home with as many rows
(run by hand, not in CI; the console's first paint and write->screen figures are
bench_tui.py's, once the console shows profiles).

    .venv/bin/python bench/bench_profiles.py [--profiles 50] [--rows 10] [--idle 3]

Same run, same machine, ratios against the baseline (one home of profiles x rows):
- full load: RootLoader.load() of every profile (stores, configs, .env, cron) plus the
  findings, against HomeLoader.load() of the single home;
- one write: reload after one profile's auth.json changed, against the single home's
  reload after its auth.json changed;
- idle CPU: process CPU seconds while watch_root / watch_home wait with nothing
  happening, for --idle seconds each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.authfile import atomic_write_bytes, ensure_home, serialize  # noqa: E402
from store.paths import Home  # noqa: E402
from store.profiles.live import RootChange, RootLoader, watch_root  # noqa: E402
from store.profiles.root import Root  # noqa: E402
from store.watch.home import HomeLoader, watch_home  # noqa: E402


def _rows(n: int, tag: str) -> list[dict]:
    return [{"id": f"{tag}{i:05d}", "label": f"key-{i}", "auth_type": "api_key", "priority": i,
             "source": "manual", "access_token": f"sk-bench-{tag}-{i:028d}", "last_status": None,
             "last_status_at": None, "last_error_code": None, "last_error_reason": None,
             "last_error_message": None, "last_error_reset_at": None, "request_count": 0}
            for i in range(n)]


def _seed(home: Home, rows: list[dict]) -> None:
    ensure_home(home)
    atomic_write_bytes(home.auth, serialize({"version": 1, "providers": {},
                                             "credential_pool": {"openrouter": rows}}))
    home.config.write_text("model:\n  provider: openrouter\n  default: m\n"
                           "fallback_providers:\n  - provider: nous\n    model: hermes-4\n")


def _timed(fn, repeat: int) -> float:
    """Median seconds of *repeat* calls."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def _idle_cpu(gen_factory, seconds: float) -> float:
    stop = threading.Event()
    started = threading.Event()

    def run() -> None:
        for _ in gen_factory(stop):
            started.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    started.wait(10)
    c0 = time.process_time()
    stop.wait(seconds)
    used = time.process_time() - c0
    stop.set()
    t.join(10)
    return used


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=50)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--idle", type=float, default=3.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        single = Home(Path(tmp) / "single")
        _seed(single, _rows(a.profiles * a.rows, "s"))
        root = Root(Path(tmp) / "root")
        _seed(Home(root.path), _rows(a.rows, "d"))
        for p in range(a.profiles - 1):
            _seed(Home(root.profiles_dir / f"p{p:03d}"), _rows(a.rows, f"p{p}"))

        base_full = _timed(lambda: HomeLoader(single).load(), 5)
        root_full = _timed(lambda: RootLoader(root).load(), 5)
        hl, rl = HomeLoader(single), RootLoader(root)
        hl.load()
        rl.load()
        base_one = _timed(lambda: hl.load({"auth.json"}), 20)
        root_one = _timed(lambda: rl.load(RootChange({"p007": {"auth.json"}})), 20)
        base_idle = _idle_cpu(lambda stop: watch_home(single, stop), a.idle)
        root_idle = _idle_cpu(lambda stop: watch_root(root, stop), a.idle)

    n = a.profiles * a.rows
    print(f"{a.profiles} profiles x {a.rows} credentials vs one home of {n}")
    print(f"full load      single {base_full * 1e3:7.1f} ms   root {root_full * 1e3:7.1f} ms   "
          f"ratio {root_full / base_full:5.2f}")
    print(f"one write      single {base_one * 1e3:7.1f} ms   root {root_one * 1e3:7.1f} ms   "
          f"ratio {root_one / base_one:5.2f}")
    print(f"idle CPU {a.idle:g}s   single {base_idle * 1e3:7.1f} ms   root {root_idle * 1e3:7.1f} ms   "
          f"ratio {root_idle / max(base_idle, 1e-6):5.2f}")


if __name__ == "__main__":
    main()
