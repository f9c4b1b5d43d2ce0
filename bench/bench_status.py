"""Benchmark: the CPU of the proxy's status file, the once-a-second work beside the event loop.

    .venv/bin/python bench/bench_status.py [--requests 300] [--calls 300] [--rounds 3] [--compare TREE]
                                           [--profile]

A proxy (``store.proxy.server.ProxyServer``) on a home like ``bench/bench_proxy.py``'s (the
four bench keys in ``openrouter``, then a ``nous`` fallback), in front of the in-process fake
provider, serves ``--requests`` requests (one key answers 429 after a few, so the rate-limit
counters and the chain rows hold something); its periodic task is then stopped and, in this
process, timed in CPU time (the machine's other load barely moves it): the loop thread's
(``time.thread_time``) for the calls, the whole process's (``time.process_time``: the
threads the tick hands work to count) for the ticks:

- ``status()``: the document built on the event loop, per call;
- ``write_status``: JSON encode and atomic write of that document, per call;
- ``count flush``: the write-behind of a busy second's request counts (``Chain.flush``: the
  store transaction), called on the loop's thread here;
- ``tick busy`` / ``tick idle``: the periodic task itself (``_every_second`` with its interval
  set to 0, so it loops back to back) per tick: everything it does once a second, in whatever
  thread; busy: a request's line and count land between two ticks (the document changes, the
  count is flushed), idle: nothing happens between ticks.

``--compare TREE`` runs the same measurements on another source tree (e.g. ``git archive HEAD
store tui | tar -x -C /tmp/ref``) in a subprocess, interleaved round by round with this tree's,
and prints each figure's ratio this/TREE (the median of the rounds). ``--profile`` prints the
cProfile of ``status()`` + ``write_status`` (this tree only).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if "--tree" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1])
sys.path.insert(1 if "--tree" in sys.argv else 0, str(ROOT))

import aiohttp  # noqa: E402

from store.paths import Home  # noqa: E402
from store.proxy import server as server_module  # noqa: E402
from store.proxy.edge.inbound import Gate  # noqa: E402
from store.proxy.observing.stats import write_status  # noqa: E402
from store.proxy.routing.chain import Chain  # noqa: E402
from store.proxy.server import ProxyServer  # noqa: E402
from tui.demo.fake_provider import FakeProvider, Quota  # noqa: E402

KEYS = [f"sk-or-v1-bench-{i:032d}" for i in range(4)]
NOUS = "sk-nous-bench-000000000000000000000001"
FIGURES = ("status()", "write_status", "count flush", "tick busy", "tick idle")


def bench_home(root: Path, upstream: str) -> Home:
    """bench/bench_proxy.py's home (the four bench keys on *upstream*), plus a nous fallback."""
    root.mkdir(mode=0o700)
    rows = [{"id": f"b{i}", "label": f"bench-{i}", "auth_type": "api_key", "priority": i, "source": "manual",
             "access_token": k, "base_url": upstream + "/api/v1", "last_status": None, "request_count": 0}
            for i, k in enumerate(KEYS)]
    nous = [{"id": "n0", "label": "nous-0", "auth_type": "api_key", "priority": 0, "source": "manual",
             "access_token": NOUS, "base_url": upstream + "/v1", "last_status": None, "request_count": 0}]
    auth = root / "auth.json"
    auth.write_text(json.dumps({"version": 1, "providers": {},
                                "credential_pool": {"openrouter": rows, "nous": nous}}))
    auth.chmod(0o600)
    (root / "config.yaml").write_text("model:\n  provider: openrouter\n  default: fake-model\n"
                                      "credential_pool_strategies:\n  openrouter: round_robin\n"
                                      "fallback_providers:\n  - provider: nous\n    model: fallback-model\n")
    return Home(root)


class Loop:
    """An event loop in a thread of its own; ``call(coro)`` runs *coro* there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bench-proxy", daemon=True)
        self.thread.start()

    def call(self, coro: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


async def _traffic(url: str, n: int) -> None:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    async with aiohttp.ClientSession() as s:
        for i in range(n):
            b = dict(body, messages=[{"role": "user", "content": f"conversation {i % 16}"}])
            async with s.post(url + "/chat/completions", json=b) as r:
                await r.read()


def _cpu_per_call(fn: Any, calls: int) -> float:
    """CPU seconds of this thread (the event loop's) per call of *fn*."""
    fn()
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return (time.thread_time() - start) / calls


async def _ticks(server: ProxyServer, seconds: float, busy: bool) -> float:
    """CPU seconds per tick of the periodic task run back to back for *seconds* of wall time;
    *busy*: a traced request's line lands before every tick (the document changes)."""
    ticks = [0]
    fwd = server.forwarder
    cut = fwd.cut_overdue

    def counted() -> None:
        ticks[0] += 1
        if busy:
            trace = server.requests.begin(f"bench-{ticks[0]}", "/v1/chat/completions")
            server.requests.end(trace, 200)
            server.chain.counts.add("openrouter", f"b{ticks[0] % 4}")
        cut()

    fwd.cut_overdue = counted
    saved = server_module.FLUSH_INTERVAL
    server_module.FLUSH_INTERVAL = 0.0
    try:
        task = asyncio.ensure_future(server._every_second())
        await asyncio.sleep(0.2)
        n0, c0 = ticks[0], time.process_time()
        await asyncio.sleep(seconds)
        n1, c1 = ticks[0], time.process_time()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        server_module.FLUSH_INTERVAL = saved
        fwd.cut_overdue = cut
    return (c1 - c0) / max(1, n1 - n0)


def _flush(server: ProxyServer) -> None:
    """The write-behind of a second's request counts (four keys), as a busy tick does it."""
    for i in range(40):
        server.chain.counts.add("openrouter", f"b{i % 4}")
    server.chain.flush()


def measure(requests: int, calls: int, profile: bool = False) -> dict[str, float]:
    """The figures of this process's tree, CPU µs each."""
    with tempfile.TemporaryDirectory() as tmp, FakeProvider() as fake:
        fake.quota(KEYS[3], Quota(limit=5, window=3600))
        home = bench_home(Path(tmp) / "home", fake.url)
        chain = Chain(home, "openrouter", env={})
        server = ProxyServer(home, chain, Gate(None), port=0, watch=False)
        loop = Loop()
        try:
            loop.call(server.start())
            loop.call(_traffic(f"http://127.0.0.1:{server.port}/v1", requests))
            for t in server._tasks:             # the periodic task off: only what is measured runs
                loop.loop.call_soon_threadsafe(t.cancel)
            time.sleep(0.3)

            async def figures() -> dict[str, float]:
                doc = server.status()
                out = {"status()": _cpu_per_call(server.status, calls),
                       "write_status": _cpu_per_call(lambda: write_status(home, doc), calls)}
                out["count flush"] = _cpu_per_call(lambda: _flush(server), max(10, calls // 10))
                out["tick busy"] = await _ticks(server, 1.5, busy=True)
                out["tick idle"] = await _ticks(server, 1.5, busy=False)
                if profile:
                    prof = cProfile.Profile(time.process_time)
                    prof.enable()
                    for _ in range(calls):
                        write_status(home, server.status())
                    prof.disable()
                    pstats.Stats(prof).sort_stats("tottime").print_stats(25)
                return {k: v * 1e6 for k, v in out.items()}

            res = loop.call(figures())
            loop.call(server.stop())
        finally:
            loop.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", type=Path)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:
        print(json.dumps(measure(args.requests, args.calls)))
        return 0
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for r in range(args.rounds):
        ours.append(measure(args.requests, args.calls, profile=args.profile and r == 0))
        if args.compare is not None:
            out = subprocess.run([sys.executable, __file__, "--tree", str(args.compare.resolve()), "--json",
                                  "--requests", str(args.requests), "--calls", str(args.calls)],
                                 capture_output=True, text=True, timeout=600, check=True).stdout
            theirs.append(json.loads(out.strip().splitlines()[-1]))
    print(f"CPU µs per call, median of {args.rounds} round(s); {args.requests} requests served before")
    head = f"{'':14}{'this tree':>12}" + (f"{'compare':>12}{'ratio':>8}" if theirs else "")
    print(head)
    for k in FIGURES:
        mine = statistics.median(o[k] for o in ours)
        line = f"{k:14}{mine:12.1f}"
        if theirs:
            other = statistics.median(o[k] for o in theirs)
            line += f"{other:12.1f}{mine / other:8.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
