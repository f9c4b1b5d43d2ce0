"""What ``hermes-admin monitor`` costs (run by hand, not in CI), in one run:

    .venv/bin/python bench/bench_monitor.py [--profiles 50] [--rows 20] [--idle 10] [--scrape 10000]
                                            [--alerts 40]

- idle CPU: the monitor (``hermes-admin monitor --root``) on a root of profiles x rows keys
  (1,000 by default), against a baseline watcher in a process of its own: the console's idle
  path without Textual (``store.profiles.live.follow_root`` with the console's StopFlag). Both
  read every thread's run time from /proc/<pid>/task/*/schedstat over --idle seconds.
- scrape: one /metrics exposition of --scrape credentials (10% cooling, so their seconds left
  change every scrape), cold (every line formatted) and warm (p50/p99 over 50 scrapes; goal
  under 50 ms), after a one-row write, and prometheus_client's own ``generate_latest`` over the
  same collector for comparison.
- write-to-alert: a monitor following a home, a local json:// webhook; --alerts times the
  span from a write that empties the pool (the transaction's release) to the webhook receiving
  the alert, p50 and p99 (goal p99 under 2 s; the quiet period, which only delays
  recoveries, is set to 0.05 s here).
- proxy /metrics on against off (``--proxy-rounds``, 0 skips it): two hermes-admin proxies
  (one with ``--no-metrics``) and the bare aiohttp passthrough (bench/bench_proxy.py's targets
  and load generator) in front of one fake provider, interleaved rounds; the proxy with
  /metrics on is scraped every ``--scrape-every`` seconds while it is measured. Printed: each
  proxy's ratio to the bare passthrough, and on/off (goal within 1.05x).
- a dead target (``--dead-timeout`` S, 0 skips it): one alert to a receiver that accepts and
  never answers (Apprise's timeouts set to S) and to a live local webhook; the time until the
  live one has it, targets tried at once against one at a time (as before #29), each as a
  share of S (goal: at once, far under 1).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client.exposition import generate_latest  # noqa: E402

from store.authfile import atomic_write_bytes, ensure_home, serialize  # noqa: E402
from store.monitor.alerts import FIRING, Notification  # noqa: E402
from store.monitor.conditions import Condition  # noqa: E402
from store.monitor.delivery import Deliverer  # noqa: E402
from store.monitor.exposition import Exposition  # noqa: E402
from store.monitor.metrics import MonitorCollector, MonitorStats  # noqa: E402
from store.monitor.sample import ProfileSample, Sample  # noqa: E402
from store.paths import Home  # noqa: E402
from store.pools.view import build_pool, build_pools  # noqa: E402
from store.redaction.redact import Redactor  # noqa: E402
from tests.monitor.helpers import Running, Webhook, exhaust_all, reset_all, rules, targets  # noqa: E402

BASELINE = """
import sys
from store.profiles.root import Root
from store.watch.loop import StopFlag
from store.profiles.live import follow_root
from pathlib import Path
print("ready", flush=True)
for _state in follow_root(Root(Path(sys.argv[1])), StopFlag()):
    pass
"""


def _rows(n: int, tag: str, now: float = 0.0, cooling_every: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        benched = cooling_every and i % cooling_every == 0
        out.append({"id": f"{tag}{i:05d}", "label": f"key-{i}", "auth_type": "api_key", "priority": i,
                    "source": "manual", "access_token": f"sk-bench-{tag}-{i:028d}",
                    "last_status": "exhausted" if benched else None, "last_status_at": now if benched else None,
                    "last_error_code": 429 if benched else None, "last_error_reason": None,
                    "last_error_message": None, "last_error_reset_at": now + 3600 + i if benched else None,
                    "request_count": i})
    return out


def _seed(home: Home, rows: list[dict]) -> None:
    ensure_home(home)
    atomic_write_bytes(home.auth, serialize({"version": 1, "providers": {}, "credential_pool": {"openrouter": rows}}))


def cpu_seconds(pid: int) -> float:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def idle_cpu(pid: int, seconds: float) -> float:
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0) * 100


def _wait_line(proc: subprocess.Popen[str], word: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if word not in line:
        raise SystemExit(f"did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")


def bench_idle(tmp: Path, profiles: int, rows: int, seconds: float) -> None:
    root = tmp / "root"
    _seed(Home(root), _rows(rows, "d"))
    for p in range(profiles - 1):
        _seed(Home(root / "profiles" / f"p{p:03d}"), _rows(rows, f"p{p}"))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("API_KEY", "_TOKEN"))}
    exe = str(Path(sys.executable).parent / "hermes-admin")
    figures = {}
    for name, cmd, word in (
            ("baseline watcher (follow_root)", [sys.executable, "-c", BASELINE, str(root)], "ready"),
            ("hermes-admin monitor --root", [exe, "monitor", "--root", str(root), "--metrics", "127.0.0.1:0"],
             "metrics http://")):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        try:
            _wait_line(proc, word)
            time.sleep(3.0)      # the first load and evaluation settle
            figures[name] = idle_cpu(proc.pid, seconds)
        finally:
            proc.terminate()
            proc.wait(20)
    print(f"idle CPU over {seconds:g} s, root of {profiles} profiles x {rows} keys = {profiles * rows} keys:")
    for name, cpu in figures.items():
        print(f"  {name:<34} {cpu:.3f} % of a core")
    base, mon = figures.values()
    print(f"  monitor / baseline = {mon / max(base, 1e-9):.2f}x")


def bench_scrape(n: int) -> None:
    now = time.time()
    pools = 10
    doc = {"version": 1, "providers": {}, "credential_pool": {
        f"pool{p:02d}": _rows(n // pools, f"q{p}", now, cooling_every=10) for p in range(pools)}}
    views = build_pools(doc, now=now)
    # One redactor for the run, as the daemon's (it changes only when the home's secrets do).
    red = Redactor()
    sample = Sample([ProfileSample("default", Home(Path("/nonexistent")), views, None, now, redactor=red)])
    clock = [now]
    collector = MonitorCollector(lambda: (sample, clock[0], MonitorStats()))
    fast = Exposition(collector)
    t0 = time.perf_counter()
    body = fast.render()
    cold = (time.perf_counter() - t0) * 1000
    warm = []
    for i in range(50):
        clock[0] = now + 1 + i
        t0 = time.perf_counter()
        fast.render()
        warm.append((time.perf_counter() - t0) * 1000)
    # One row written, the others' views reused, as the watcher's pool cache does.
    rows = list(doc["credential_pool"]["pool00"])
    rows[3] = dict(rows[3], request_count=10**6)
    pool0 = build_pool("pool00", rows, strategy="fill_first", now=now, previous=views[0])
    sample = Sample([ProfileSample("default", Home(Path("/nonexistent")), [pool0, *views[1:]], None, now,
                                   redactor=red)])
    t0 = time.perf_counter()
    fast.render()
    write = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    ref = generate_latest(collector)
    reference = (time.perf_counter() - t0) * 1000
    warm.sort()
    lines = body.count(b"\n")
    print(f"scrape of {n} credentials ({len(body) / 1e6:.1f} MB, {lines} lines, 10% cooling):")
    print(f"  cold {cold:.0f} ms; warm p50 {statistics.median(warm):.1f} ms, p99 {warm[int(len(warm) * .99) - 1]:.1f}"
          f" ms (goal < 50 ms); after a one-row write {write:.1f} ms")
    print(f"  prometheus_client generate_latest over the same collector: {reference:.0f} ms "
          f"(same bytes: {ref == fast.render()})")


def bench_alerts(tmp: Path, n: int) -> None:
    home = Home(tmp / "alert-home")
    _seed(home, _rows(4, "a"))
    os.chmod(home.root, 0o700)
    hook = Webhook()
    lat = []
    try:
        with Running(home=home, rules=rules(quiet=0.05, retries=0), targets=targets(hook.url), backoff=0.01) as run:
            deadline = time.monotonic() + 30
            while run.call(lambda: run.monitor.evaluations) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            for _ in range(n):
                before = len(hook.got())
                exhaust_all(home)
                t0 = time.perf_counter()
                while not any("no usable key" in str(p.get("title")) and "critical" in str(p.get("title"))
                              for p in hook.got()[before:]):
                    if time.perf_counter() - t0 > 30:
                        raise SystemExit("an alert never arrived")
                    time.sleep(0.002)
                lat.append((time.perf_counter() - t0) * 1000)
                reset_all(home)
                t1 = time.perf_counter()
                while not any("resolved" in str(p.get("title")) and "no usable key" in str(p.get("title"))
                              for p in hook.got()[before:]):
                    if time.perf_counter() - t1 > 30:
                        raise SystemExit("a recovery never arrived")
                    time.sleep(0.002)
    finally:
        hook.close()
    lat.sort()
    p99 = lat[max(0, int(len(lat) * .99) - 1)]
    print(f"write-to-alert over {n} alerts (webhook on loopback): p50 {statistics.median(lat):.0f} ms, "
          f"p99 {p99:.0f} ms, max {lat[-1]:.0f} ms (goal p99 < 2000 ms)")


class Scraper:
    """Scrape a proxy's /metrics every *every* seconds in a thread (as Prometheus would, harder)."""

    def __init__(self, url: str, every: float) -> None:
        self.url, self.every = url, every
        self.stop = threading.Event()
        self.times: list[float] = []
        self.size = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(self.every):
            t0 = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=10) as r:
                self.size = len(r.read())
            self.times.append(time.perf_counter() - t0)

    def __enter__(self) -> Scraper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(15)


def bench_proxy_metrics(rounds: int, seconds: float, every: float) -> None:
    from bench import bench_proxy as bp

    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-metrics-"))
    procs: list[subprocess.Popen] = []
    try:
        fake, upstream = bp.start_fake(tmp)
        procs.append(fake)
        on, on_url = bp.start_ours(tmp, upstream, name="home-on")
        off, off_url = bp.start_ours(tmp, upstream, extra=("--no-metrics",), name="home-off")
        bare, bare_url = bp.start_bare(tmp, upstream)
        procs += [on, off, bare]
        metrics_url = on_url.removesuffix("/v1") + "/metrics"
        targets = {"metrics-on": on_url, "metrics-off": off_url, "bare-aiohttp": bare_url}
        runs: dict[str, list[dict]] = {name: [] for name in targets}
        scrapes: list[float] = []
        size = 0
        print(f"proxy /metrics on vs off: {rounds} rounds of {seconds:g} s, /metrics scraped every {every:g} s "
              f"while the proxy with it is measured; load average {os.getloadavg()[0]:.2f}", flush=True)
        for r in range(rounds):
            order = list(targets.items()) if r % 2 == 0 else list(reversed(targets.items()))
            for name, url in order:
                key = bp.KEYS[0] if name == "bare-aiohttp" else "any-bearer"
                if name == "metrics-on":
                    with Scraper(metrics_url, every) as s:
                        runs[name].append(bp.measure(url, key, seconds))
                    scrapes += s.times
                    size = s.size or size
                else:
                    runs[name].append(bp.measure(url, key, seconds))
        res = {name: bp.combine(v) for name, v in runs.items()}
        cols = ("c1_p50", "c16_p50", "c16_p99", "rps", "ttfb_p50", "errors")
        print(f"{'target':<14}" + "".join(f"{c:>10}" for c in cols) + "   (ms; rps at 64 concurrent)")
        for name, v in res.items():
            print(f"{name:<14}" + "".join(f"{v[c]:>10d}" if c == "errors" else f"{v[c]:>10.2f}" for c in cols))
        bare_r = res["bare-aiohttp"]
        for name in ("metrics-on", "metrics-off"):
            print(f"ratio {name} / bare-aiohttp: " + "  ".join(
                f"{k} {res[name][k] / bare_r[k]:.3f}" for k in ("c1_p50", "c16_p50") if bare_r[k] > 0)
                + f"  rps {bare_r['rps'] / res[name]['rps']:.3f} (bare/ours)")
        for k in ("c1_p50", "c16_p50"):
            ratio = res["metrics-on"][k] / res["metrics-off"][k]
            print(f"  /metrics on / off, {k}: {ratio:.3f}x (goal <= 1.05)   {'met' if ratio <= 1.05 else 'NOT met'}")
        ratio = res["metrics-off"]["rps"] / res["metrics-on"]["rps"]
        print(f"  /metrics on / off, throughput cost: {ratio:.3f}x (goal <= 1.05)   "
              f"{'met' if ratio <= 1.05 else 'NOT met'}")
        if scrapes:
            scrapes.sort()
            print(f"  {len(scrapes)} scrapes under load: p50 {statistics.median(scrapes) * 1000:.1f} ms, "
                  f"max {scrapes[-1] * 1000:.1f} ms, {size} bytes")
        print(f"(each figure: the median of {rounds} rounds; load average at the end {os.getloadavg()[0]:.2f})")
    finally:
        bp.stop_all(procs, tmp)


def bench_dead_target(tmp: Path, timeout: float) -> None:
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(16)                  # the kernel accepts; nothing ever answers
    hook = Webhook()
    home = Home(tmp / "dead-target")
    ensure_home(home)
    try:
        ts = targets(f"json://127.0.0.1:{dead.getsockname()[1]}/never?cto={timeout:g}&rto={timeout:g}", hook.url)
        d = Deliverer(ts, retries=0, redactor=lambda _n: Redactor(), audit_home=lambda _n: home,
                      stop=threading.Event())
        n = Notification(FIRING, Condition("bench", "pool_empty", "critical", "bench", "bench", "bench"), 0.0, 0.0)
        serial = lambda _n: [d.deliver_one(_n, t) for t in ts]  # noqa: E731 (one at a time, as before #29)
        print(f"a dead target (Apprise timeouts {timeout:g} s) and a live one:")
        for name, run in (("at once", d.deliver), ("one at a time", serial)):
            before = len(hook.got())
            t0 = time.monotonic()
            th = threading.Thread(target=run, args=(n,))
            th.start()
            while len(hook.got()) == before and th.is_alive():
                time.sleep(0.002)
            live = time.monotonic() - t0
            th.join()
            print(f"  {name:14s} live target served after {live:.3f} s = {live / timeout:.2f} of the dead "
                  f"one's timeout; both done after {time.monotonic() - t0:.2f} s")
    finally:
        hook.close()
        dead.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--profiles", type=int, default=50)
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--idle", type=float, default=10.0)
    ap.add_argument("--scrape", type=int, default=10_000)
    ap.add_argument("--alerts", type=int, default=40)
    ap.add_argument("--proxy-rounds", type=int, default=3, help="proxy /metrics on vs off: rounds (0: skip)")
    ap.add_argument("--proxy-seconds", type=float, default=3.0, help="seconds per load run")
    ap.add_argument("--scrape-every", type=float, default=1.0, help="seconds between scrapes of /metrics")
    ap.add_argument("--only-proxy", action="store_true", help="measure only the proxy's /metrics on vs off")
    ap.add_argument("--dead-timeout", type=float, default=3.0, help="a dead notify target's timeout (0: skip)")
    a = ap.parse_args()
    if not a.only_proxy:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            bench_idle(tmp, a.profiles, a.rows, a.idle)
            bench_scrape(a.scrape)
            bench_alerts(tmp, a.alerts)
            if a.dead_timeout > 0:
                bench_dead_target(tmp, a.dead_timeout)
    if a.proxy_rounds > 0:
        bench_proxy_metrics(a.proxy_rounds, a.proxy_seconds, a.scrape_every)


if __name__ == "__main__":
    main()
