"""Fleet sync: propagation latency, rule throughput, and the daemon's idle CPU.

    .venv/bin/python bench/bench_fleet.py [--n 500] [--ops 5000] [--idle 10]

Starts a real redis-server on a free loopback port (temp dir, no persistence), two
homes A and B sharing a key, and one ``hermes-admin fleet sync`` process per home.

1. Propagation: N transitions written on A (alternately a 429 bench with a later
   reset time and an operator reset, each a store.transaction), each timed from the
   write on A to B's auth.json showing it (B's file polled every 2 ms). p50/p99.
   Baselines from the same run: the local floor (a watcher on A's own home seeing the
   same write, store.watch.home) and the anchor, LiteLLM's 1 s re-read (a poller with a 1 s
   interval sees a change after U(0, 1 s): p50 500 ms, p99 990 ms).
2. What checking costs per event: a hint's read of the key's hash (TIME, the version and
   HGETALL in one round trip, then store.fleet.inbound's checks), against parsing the
   message as the fleet once applied it; and the outbound redaction's set-up per publish
   (the home's secrets, store.fleet.outbound.Outbound.for_home).
3. Throughput: fleet mark/clear operations per second (one Lua call each), from one
   client and from three threads, against plain HSETs on the same connection.
4. Idle CPU over S seconds: the sync daemon against an idle python process and a
   process running only the console's home watcher (its static floor).

Prints figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
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

from store.fleet import inbound  # noqa: E402
from store.fleet.client import FleetClient, connect  # noqa: E402
from store.fleet.keys import fleet_fingerprint  # noqa: E402
from store.fleet.outbound import Outbound  # noqa: E402
from store.ops import actions  # noqa: E402
from store.paths import Home  # noqa: E402
from store.pools import policy  # noqa: E402
from store.transaction import transaction  # noqa: E402
from store.watch.home import follow  # noqa: E402

POOL = "openrouter"
KEY = "sk-or-v1-benchFLEETkey0000000000000000001"
SECRET = "bench-fleet-secret-0123456789abcdef"
CLK = os.sysconf("SC_CLK_TCK")
URL: list[str] = []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_home(root: Path) -> Home:
    import json

    home = Home(root)
    root.mkdir(mode=0o700, parents=True)
    rows = [{"id": f"{i:06x}", "label": f"k{i}", "auth_type": "api_key", "priority": i, "source": "manual",
             "access_token": KEY if i == 0 else f"sk-or-v1-benchother{i:04d}" + "0" * 24,
             "last_status": None, "last_status_at": None, "last_error_code": None, "last_error_reason": None,
             "last_error_message": None, "last_error_reset_at": None, "request_count": 0} for i in range(10)]
    home.auth.write_text(json.dumps({"version": 1, "providers": {}, "credential_pool": {POOL: rows}}, indent=2))
    os.chmod(home.auth, 0o600)
    return home


def row0(home: Home) -> dict:
    import json

    for _ in range(5):
        try:
            return json.loads(home.auth.read_bytes())["credential_pool"][POOL][0]
        except (ValueError, OSError):
            time.sleep(0.001)
    raise RuntimeError("B's auth.json unreadable")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def propagation(a: Home, b: Home, n: int, bound: float = 10.0) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        if i % 2 == 0:
            until_at = time.time() + 600 + i
            with transaction(a) as doc:
                rows = doc["credential_pool"][POOL]
                policy.mark_exhausted(rows, rows[0], time.time(), code=429, reason="rate_limit_exceeded",
                                      reset_at=until_at)
            done = lambda u=until_at: abs((row0(b).get("last_error_reset_at") or 0) - u) < 0.5  # noqa: E731
        else:
            with transaction(a) as doc:
                actions.reset(doc, POOL, "000000", time.time())
            done = lambda: row0(b).get("last_status") is None  # noqa: E731
        deadline = t0 + bound
        while not done():
            if time.perf_counter() > deadline:
                fs = FleetClient(connect(URL[0]), "bench").snapshot().keys
                raise RuntimeError(f"transition {i} did not reach B within {bound}s: B row {row0(b)}, "
                                   f"A row {row0(a)}, fleet {fs}")
            time.sleep(0.002)
        out.append(time.perf_counter() - t0)
    return out


def local_floor(home: Home, n: int) -> list[float]:
    """Write on a home -> a watcher on the same home reports it (no network at all)."""
    stop = threading.Event()
    seen = threading.Event()
    it = follow(home, stop)
    next(it)

    def run() -> None:
        for _ in it:
            seen.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    out = []
    for i in range(n):
        seen.clear()
        t0 = time.perf_counter()
        with transaction(home) as doc:
            doc["credential_pool"][POOL][1]["request_count"] = i
        seen.wait(10)
        out.append(time.perf_counter() - t0)
        time.sleep(0.03)   # past the watcher's debounce, so each write is its own event
    stop.set()
    return out


def check_costs(url: str, home: Home, n: int) -> dict[str, list[float]]:
    """Seconds per event: the hash read a hint costs now, the message parse it replaced, and
    the outbound redaction's set-up per publish."""
    import json

    c = FleetClient(connect(url), "bench")
    fp = fleet_fingerprint(SECRET.encode(), "token:" + KEY)
    msg = json.dumps({"fp": fp, **c.r.hgetall(c.k("s", fp))})
    out: dict[str, list[float]] = {"read": [], "message": [], "outbound": []}
    for _ in range(n):
        t0 = time.perf_counter()
        c.states([inbound.hint(msg) or fp])
        t1 = time.perf_counter()
        json.loads(msg)                                       # what applying the message cost
        t2 = time.perf_counter()
        out["read"].append(t1 - t0)
        out["message"].append(t2 - t1)
    for _ in range(min(n, 200)):
        t0 = time.perf_counter()
        Outbound.for_home(home, SECRET.encode())
        out["outbound"].append(time.perf_counter() - t0)
    return out


def throughput(url: str, ops: int) -> dict[str, float]:
    c = FleetClient(connect(url), "bench")
    fps = [f"{i:064x}" for i in range(20)]
    rng = random.Random(1)
    plan = [(rng.random() < 0.3, rng.choice(fps), rng.randrange(0, 500)) for _ in range(ops)]
    base = c.server_time()

    def run(client: FleetClient, part: list) -> None:
        for is_clear, fp, k in part:
            if is_clear:
                client.clear(fp, observed=base - k)
            else:
                client.mark(fp, observed=base - k, until=base + 3600 + k)

    t0 = time.perf_counter()
    run(c, plan)
    one = ops / (time.perf_counter() - t0)
    clients = [FleetClient(connect(url), f"bench-{i}") for i in range(3)]
    threads = [threading.Thread(target=run, args=(clients[i], plan[i::3])) for i in range(3)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    three = ops / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for i in range(ops):
        c.r.hset("bench:plain", "f", i)
    plain = ops / (time.perf_counter() - t0)
    return {"one": one, "three": three, "plain": plain}


def idle_cpu(cmds: dict[str, list[str]], seconds: float, env: dict[str, str]) -> dict[str, float]:
    procs = {name: subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, cmd in cmds.items()}
    try:
        time.sleep(3.0)    # past start-up and the first reconciliation
        before = {n: cpu_seconds(p.pid) for n, p in procs.items()}
        time.sleep(seconds)
        out = {n: 100.0 * (cpu_seconds(p.pid) - before[n]) / seconds for n, p in procs.items()}
        dead = [n for n, p in procs.items() if p.poll() is not None]
        if dead:
            raise RuntimeError(f"idle CPU: {', '.join(dead)} exited early; its figure would be meaningless")
        return out
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500, help="transitions for the latency figures")
    ap.add_argument("--ops", type=int, default=5000, help="mark/clear operations for throughput")
    ap.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU measurement")
    args = ap.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server not installed (apt-get install redis-server)")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    URL.append(url)
    redis_proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", str(tmp)], stdout=subprocess.DEVNULL)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_KEY", "_TOKEN", "_SECRET"))}
    env["HERMES_ADMIN_FLEET_SECRET"] = SECRET
    exe = [sys.executable, "-m", "tui.cli"]
    syncs = []
    try:
        deadline = time.time() + 10
        while True:
            try:
                connect(url).ping()
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        a, b = make_home(tmp / "a"), make_home(tmp / "b")
        for name, home in (("host-a", a), ("host-b", b)):
            syncs.append(subprocess.Popen([*exe, "fleet", "sync", "--quiet", "--home", str(home.root), "--redis",
                                           url, "--name", name], cwd=ROOT, env=env))
        viewer = FleetClient(connect(url), "bench")
        deadline = time.time() + 20
        while len(viewer.snapshot().hosts) < 2:
            if time.time() > deadline:
                raise RuntimeError("sync daemons did not start")
            time.sleep(0.1)
        version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.split()[2]
        print(f"fleet bench: redis-server {version.removeprefix('v=')}, {os.cpu_count()} CPUs, "
              f"python {sys.version.split()[0]}")
        lat = propagation(a, b, args.n)
        floor = local_floor(a, min(100, args.n))
        p50, p99 = statistics.median(lat) * 1000, pct(lat, 99) * 1000
        f50, f99 = statistics.median(floor) * 1000, pct(floor, 99) * 1000
        print(f"\npropagation A write -> B file, {len(lat)} transitions (bench/reset alternating):")
        print(f"  fleet sync        p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   max {max(lat) * 1000:7.1f} ms")
        print(f"  local watch floor p50 {f50:7.1f} ms   p99 {f99:7.1f} ms   (same home, no network)")
        print("  LiteLLM 1 s poll  p50   500.0 ms   p99   990.0 ms   (anchor: U(0, 1 s))")
        print(f"  ratios: p99 fleet / 1 s anchor = {p99 / 990:.2f}; p50 fleet / local floor = {p50 / f50:.1f}x;"
              f" goal p99 <= 250 ms: {'met' if p99 <= 250 else 'NOT met'}")
        cost = check_costs(url, b, 2000)
        print("\nwhat checking costs, per event:")
        for key, what in (("read", "hint -> hash read + check"), ("message", "message parsed (before)"),
                          ("outbound", "outbound set-up (10-row home)")):
            v = cost[key]
            print(f"  {what:<30} p50 {statistics.median(v) * 1000:7.3f} ms   p99 {pct(v, 99) * 1000:7.3f} ms")
        tp = throughput(url, args.ops)
        print(f"\nthroughput, {args.ops} fleet mark/clear ops (Lua, 20 keys):")
        print(f"  1 client {tp['one']:8.0f} ops/s   3 threads {tp['three']:8.0f} ops/s   "
              f"plain HSET {tp['plain']:8.0f} ops/s   (rules cost {tp['plain'] / tp['one']:.2f}x a plain write)")
        for p in syncs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)
        syncs.clear()
        watch_only = [sys.executable, "-c", f"import sys, threading; sys.path.insert(0, {str(ROOT)!r})\n"
                      "from pathlib import Path; from store.paths import Home; from store.watch.home import follow\n"
                      f"for _ in follow(Home(Path({str(a.root)!r})), threading.Event()): pass"]
        cpu = idle_cpu({
            "idle python": [sys.executable, "-c", "import time; time.sleep(3600)"],
            "console watch floor": watch_only,
            "fleet sync daemon": [*exe, "fleet", "sync", "--quiet", "--home", str(b.root), "--redis", url,
                                  "--name", "host-b"],
        }, args.idle, env)
        print(f"\nidle CPU over {args.idle:g} s (percent of one core):")
        for name, value in cpu.items():
            print(f"  {name:<20} {value:6.2f} %")
        floor_cpu = cpu["console watch floor"]
        extra = cpu["fleet sync daemon"] - floor_cpu
        ratio = f"{cpu['fleet sync daemon'] / floor_cpu:.1f}x" if floor_cpu > 0 else "floor below clock-tick resolution"
        print(f"  sync daemon - console watch floor = {extra:+.2f} points ({ratio})")
    finally:
        for p in syncs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)
        redis_proc.send_signal(signal.SIGTERM)
        redis_proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
