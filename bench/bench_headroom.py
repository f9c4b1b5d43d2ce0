"""Benchmark: a 429 storm through the proxy, reactive (headroom off) and with headroom on, in one run.

    .venv/bin/python bench/bench_headroom.py [--seconds 8] [--rate 50] [--rounds 3]

One scripted upstream per mode (``tui.demo.fake_provider``'s quotas, in its own process, a
fresh copy for each mode): four keys, each ``--limit`` requests per ``--window`` seconds,
every answer announcing what is left in the OpenAI dialect
(``x-ratelimit-remaining-requests`` ...). The same request stream goes to hermes-admin's
proxy (its own process) once with headroom off (a key is benched only by the 429 it gets)
and once with headroom on (a key whose answer said nothing is left until T is not picked
until T): ``--rate`` requests a second for ``--seconds``, paced, at most 8 in flight.

Reported per mode: the 429s the upstream sent, the errors the client saw (by status), and
the client's p50/p99 latency; then the added p50 of headroom on over off. Goal: at least
90% fewer upstream 429s, 0 client-visible 429s.

Then the cost of reading the headers: on an upstream that announces on every answer but
never runs out, sequential requests through the proxy with headroom on, off, and through
the bare aiohttp passthrough (``bench/bare_proxy.py``), interleaved over ``--rounds``; the
ratio of each proxy's p50 to the bare one's, and on/off of those ratios (goal: within 1.1x).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
KEYS = [f"sk-or-v1-storm-{i:032d}" for i in range(4)]
BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
IN_FLIGHT = 8


# --- child processes: the scripted upstream and the proxy -----------------------------------

def upstream_main(script: Path, port_file: Path) -> int:
    """The fake provider on *script*; on SIGTERM it writes its answers' statuses per key."""
    from tui.demo.fake_provider import FakeProvider, load_script

    provider = FakeProvider()
    load_script(provider, json.loads(script.read_text()))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    provider.start()
    port_file.with_suffix(".tmp").write_text(str(provider.port))
    port_file.with_suffix(".tmp").replace(port_file)
    stop.wait()
    counts = Counter(f"{KEYS.index(k) if k in KEYS else (k or 'none')[:24]}:{s}" for _m, p, k, s in provider.log
                     if "chat/completions" in p)
    provider.stop()
    port_file.with_suffix(".counts").write_text(json.dumps(counts))
    return 0


def proxy_main(home: Path, port_file: Path, headroom: bool) -> int:
    """hermes-admin's proxy on *home* (the same code as ``hermes-admin proxy``), headroom on or off."""
    from store.paths import Home
    from store.proxy.edge.inbound import Gate
    from store.proxy.routing.chain import Chain
    from store.proxy.server import ProxyServer, serve

    h = Home(home)
    server = ProxyServer(h, Chain(h, "openrouter", headroom=headroom), Gate(), port=0)

    def ready(s: ProxyServer) -> None:
        port_file.with_suffix(".tmp").write_text(str(s.port))
        port_file.with_suffix(".tmp").replace(port_file)
    asyncio.run(serve(server, on_ready=ready))
    return 0


def _wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise TimeoutError(f"{what} not ready after {timeout:g} s")


class Procs:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def spawn(self, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        port_file = self.tmp / f"{name}.port"
        proc = subprocess.Popen([PY, *args, str(port_file)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self.procs.append(proc)
        _wait(lambda: port_file.exists() and port_file.read_text().strip(), 30, name)
        return proc, port_file

    def upstream(self, name: str, limit: int, window: float) -> tuple[str, subprocess.Popen, Path]:
        script = self.tmp / f"{name}.json"
        script.write_text(json.dumps({"quotas": {k: {"limit": limit, "window": window, "dialect": "openai"}
                                                 for k in KEYS}}))
        proc, port_file = self.spawn(f"upstream-{name}", __file__, "--upstream", str(script))
        return f"http://127.0.0.1:{port_file.read_text().strip()}", proc, port_file

    def proxy(self, name: str, upstream: str, headroom: bool) -> str:
        home = self.tmp / f"home-{name}"
        home.mkdir(mode=0o700)
        rows = [{"id": f"k{i}", "label": f"storm-{i}", "auth_type": "api_key", "priority": i, "source": "manual",
                 "access_token": k, "base_url": upstream + "/api/v1", "last_status": None, "request_count": 0}
                for i, k in enumerate(KEYS)]
        (home / "auth.json").write_text(json.dumps({"version": 1, "providers": {},
                                                    "credential_pool": {"openrouter": rows}}))
        (home / "auth.json").chmod(0o600)
        (home / "config.yaml").write_text("model:\n  provider: openrouter\n  default: fake-model\n")
        _proc, port_file = self.spawn(f"proxy-{name}", __file__, "--proxy", str(home),
                                      "--headroom", "on" if headroom else "off")
        return f"http://127.0.0.1:{port_file.read_text().strip()}/v1"

    def bare(self, upstream: str) -> str:
        _proc, port_file = self.spawn("bare", str(ROOT / "bench" / "bare_proxy.py"), upstream + "/api/v1")
        return f"http://127.0.0.1:{port_file.read_text().strip()}/v1"

    @staticmethod
    def counts(proc: subprocess.Popen, port_file: Path) -> Counter:
        proc.terminate()
        proc.wait(15)
        return Counter(json.loads(port_file.with_suffix(".counts").read_text()))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


# --- the client -------------------------------------------------------------------------------

async def stream(url: str, rate: float, seconds: float) -> tuple[Counter, list[float]]:
    """*rate* requests a second for *seconds*, paced, at most IN_FLIGHT at once."""
    statuses: Counter = Counter()
    latencies: list[float] = []
    slots = asyncio.Semaphore(IN_FLIGHT)
    async with aiohttp.ClientSession(headers={"Authorization": "Bearer any"}) as s:
        async def one() -> None:
            async with slots:
                t0 = time.perf_counter()
                try:
                    async with s.post(url + "/chat/completions", json=BODY) as r:
                        await r.read()
                        statuses[r.status] += 1
                except aiohttp.ClientError:
                    statuses["conn"] += 1
                latencies.append(time.perf_counter() - t0)
        tasks = []
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    return statuses, latencies


async def sequential(url: str, count: int) -> list[float]:
    out = []
    async with aiohttp.ClientSession(headers={"Authorization": "Bearer any"}) as s:
        for i in range(count + 20):
            t0 = time.perf_counter()
            async with s.post(url + "/chat/completions", json=BODY) as r:
                await r.read()
            if i >= 20:           # the first ones warm the connections
                out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else float("nan")


# --- the run ----------------------------------------------------------------------------------

def storm(procs: Procs, headroom: bool, args: argparse.Namespace) -> dict:
    name = "on" if headroom else "off"
    upstream, up_proc, up_port = procs.upstream(f"storm-{name}", args.limit, args.window)
    url = procs.proxy(f"storm-{name}", upstream, headroom)
    statuses, latencies = asyncio.run(stream(url, args.rate, args.seconds))
    counts = procs.counts(up_proc, up_port)
    return {"upstream_429": sum(n for k, n in counts.items() if k.endswith(":429")),
            "upstream_total": sum(counts.values()),
            "client": dict(statuses), "p50": pct(latencies, 50), "p99": pct(latencies, 99),
            "per_key": dict(sorted(counts.items()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--limit", type=int, default=40, help="requests per key per window")
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=300, help="sequential requests per target per round")
    ap.add_argument("--upstream", type=Path)
    ap.add_argument("--proxy", type=Path)
    ap.add_argument("--headroom", choices=("on", "off"), default="on")
    ap.add_argument("port_file", type=Path, nargs="?")
    args = ap.parse_args(argv)
    if args.upstream:
        return upstream_main(args.upstream, args.port_file)
    if args.proxy:
        return proxy_main(args.proxy, args.port_file, args.headroom == "on")
    tmp = Path(tempfile.mkdtemp(prefix="bench-headroom-"))
    procs = Procs(tmp)
    try:
        print(f"{os.cpu_count()} CPUs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"4 keys x {args.limit} requests per {args.window:g} s; {args.rate:g} req/s for {args.seconds:g} s, "
              f"at most {IN_FLIGHT} in flight", flush=True)
        results = {}
        for headroom in (False, True):
            label = "headroom on" if headroom else "reactive (headroom off)"
            print(f"storm: {label} ...", flush=True)
            results[label] = storm(procs, headroom, args)
        print(f"\n{'mode':<26}{'upstream 429s':>15}{'upstream reqs':>15}{'client p50':>12}{'client p99':>12}"
              "   client statuses")
        for label, r in results.items():
            print(f"{label:<26}{r['upstream_429']:>15}{r['upstream_total']:>15}{r['p50']:>10.2f}ms"
                  f"{r['p99']:>10.2f}ms   {r['client']}")
            print(' ' * 26 + f"upstream answers per key:status {r['per_key']}")
        off, on = results["reactive (headroom off)"], results["headroom on"]
        fewer = 1 - on["upstream_429"] / off["upstream_429"] if off["upstream_429"] else float("nan")
        client_429 = on["client"].get(429, 0)
        met = "met" if fewer >= 0.9 else "NOT met"
        print(f"\nupstream 429s: {fewer:.1%} fewer with headroom (goal >= 90%)   {met}")
        print(f"client-visible 429s with headroom: {client_429} (goal 0)   {'met' if client_429 == 0 else 'NOT met'}")
        print(f"client-visible errors: off {sum(n for s, n in off['client'].items() if s != 200)}, "
              f"on {sum(n for s, n in on['client'].items() if s != 200)}")
        print(f"added p50 with headroom on: {on['p50'] - off['p50']:+.2f} ms")

        print("\ncost of reading the headers (no 429s; every answer announces):", flush=True)
        upstream, _up, _port = procs.upstream("plain", 10**9, 3600)
        targets = {"headroom on": procs.proxy("plain-on", upstream, True),
                   "headroom off": procs.proxy("plain-off", upstream, False), "bare-aiohttp": procs.bare(upstream)}
        runs: dict[str, list[float]] = {k: [] for k in targets}
        for r in range(args.rounds):
            order = list(targets.items()) if r % 2 == 0 else list(reversed(targets.items()))
            for name, url in order:
                runs[name].append(pct(asyncio.run(sequential(url, args.count)), 50))
        p50 = {k: statistics.median(v) for k, v in runs.items()}
        for k, v in p50.items():
            print(f"  {k:<14} c1 p50 {v:.3f} ms (median of {args.rounds} rounds)")
        r_on, r_off = p50["headroom on"] / p50["bare-aiohttp"], p50["headroom off"] / p50["bare-aiohttp"]
        change = r_on / r_off
        print(f"  ratio to bare: on {r_on:.2f}, off {r_off:.2f}; on/off {change:.3f} (goal <= 1.1)   "
              f"{'met' if change <= 1.1 else 'NOT met'}")
        print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        procs.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
