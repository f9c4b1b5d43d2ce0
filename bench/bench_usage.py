"""Benchmark: what the usage ledger costs (#29), in one run.

    .venv/bin/python bench/bench_usage.py [--seconds 3] [--rounds 3] [--requests 1000000] [--keys 1000]

1. The proxy with the ledger on against the same proxy with it off (``usage: {ledger:
   false}``), each as a ratio to the bare aiohttp passthrough (``bench/bare_proxy.py``) on
   the same loopback fake provider (which reports usage in every answer), the targets
   interleaved over ``--rounds`` and each figure the median (a shared machine's load
   changes between two measurements). Goal: ledger on within 1.05x of ledger off, as
   ratios to the passthrough.
2. ``hermes-admin usage --since 30d --json`` (in-process: the verb's own code, its JSON
   written to /dev/null) over a ledger of ``--requests`` requests on ``--keys`` keys,
   against the same aggregate as one SQL query through the ``sqlite3`` module. Goal:
   within 1.5x.
3. The ledger's size per million requests (rows and hourly roll-ups, after a checkpoint).

Every figure is printed with the machine's load (``os.getloadavg``) beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_proxy as bp  # noqa: E402  (the proxy benchmark's targets and load generator)

from store.usage.ledger import ledger_path, open_ledger, write_batch  # noqa: E402
from store.usage.record import Spent  # noqa: E402


def start_proxy(tmp: Path, upstream: str, name: str, ledger: bool) -> tuple[subprocess.Popen, str]:
    """hermes-admin's proxy on a home of the bench keys, its ledger on or off."""
    home = tmp / name
    home.mkdir(mode=0o700)
    rows = [{"id": f"b{i}", "label": f"bench-{i}", "auth_type": "api_key", "priority": i, "source": "manual",
             "access_token": k, "base_url": upstream + "/api/v1", "last_status": None, "request_count": 0}
            for i, k in enumerate(bp.KEYS)]
    doc = {"version": 1, "providers": {}, "credential_pool": {"openrouter": rows}}
    (home / "auth.json").write_text(json.dumps(doc))
    (home / "auth.json").chmod(0o600)
    (home / "config.yaml").write_text("model:\n  provider: openrouter\n  default: fake-model\n")
    (home / "hermes-admin.yaml").write_text(f"usage:\n  ledger: {'true' if ledger else 'false'}\n")
    exe = Path(sys.executable).parent / "hermes-admin"
    proc = subprocess.Popen([str(exe), "proxy", "--home", str(home), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if "http://" not in line:
        raise SystemExit(f"hermes-admin proxy did not start: {line!r}")
    return proc, line.split()[3]


def latency(url: str, seconds: float) -> dict[str, float]:
    c1 = bp.run_load(url, bp.KEYS[0], 1, count=int(400 * seconds / 3) or 100)
    c16 = bp.run_load(url, bp.KEYS[0], 16, seconds=seconds)
    return {"c1_p50": bp.pct(c1["latencies"], 50), "c16_p50": bp.pct(c16["latencies"], 50),
            "errors": c1["errors"] + c16["errors"]}


def proxy_part(seconds: float, rounds: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-usage-"))
    procs: list[subprocess.Popen] = []
    try:
        fake, upstream = bp.start_fake(tmp)
        procs.append(fake)
        bare, bare_url = bp.start_bare(tmp, upstream)
        procs.append(bare)
        on, on_url = start_proxy(tmp, upstream, "on", True)
        off, off_url = start_proxy(tmp, upstream, "off", False)
        procs += [on, off]
        targets = {"bare": bare_url, "ledger-on": on_url, "ledger-off": off_url}
        for url in targets.values():
            bp.run_load(url, bp.KEYS[0], 16, seconds=1.0)       # warm up
        runs: dict[str, list[dict]] = {k: [] for k in targets}
        for r in range(rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for name in order:
                runs[name].append(latency(targets[name], seconds))
        got = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in runs.items()}
        print(f"1. proxy latency, median of {rounds} rounds (load {os.getloadavg()[0]:.2f}):")
        for name, g in got.items():
            print(f"   {name:11} c1 p50 {g['c1_p50']:.3f} ms   c16 p50 {g['c16_p50']:.3f} ms   "
                  f"errors {g['errors']:.0f}")
        for fig in ("c1_p50", "c16_p50"):
            on_r = got["ledger-on"][fig] / got["bare"][fig]
            off_r = got["ledger-off"][fig] / got["bare"][fig]
            print(f"   {fig}: ledger on {on_r:.3f}x bare, off {off_r:.3f}x bare: on/off {on_r / off_r:.3f}x "
                  f"(goal <= 1.05x)")
        on.terminate()
        on.wait(15)
        with sqlite3.connect(ledger_path(tmp / "on")) as c:
            print(f"   the ledger-on proxy recorded {c.execute('SELECT count(*) FROM requests').fetchone()[0]} "
                  f"requests")
    finally:
        bp.stop_all(procs, tmp)


WRITER_ROWS = 100_000      # rows that go through the ledger's own writer (its throughput figure)

# The rest of the ledger made by SQLite itself (seconds instead of minutes of Python objects):
# the same table, the same key, model and cost shapes; key k of row i is i * 7919 % keys.
_FILL = """WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO requests (at, pool, row_id, fingerprint, model, endpoint, route, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cost_status, partial)
SELECT ? - (abs(random()) % 596160000) / 1000.0, 'pool' || (i * 7919 % ? % 7), printf('k%04d', i * 7919 % ?),
    printf('sk-…%04d', i * 7919 % ?), 'model-' || (i * 7919 % ? % 13), 'openai', NULL, abs(random()) % 5000,
    abs(random()) % 2000, abs(random()) % 1000, NULL, 0, (abs(random()) % 1000000) / 1e8, 'estimated', 0 FROM n"""
_ROLL_ALL = """INSERT INTO hourly SELECT CAST(at / 3600 AS INTEGER), pool, coalesce(row_id, ''),
    max(coalesce(fingerprint, '')), coalesce(model, ''), coalesce(endpoint, ''), cost_status, count(*),
    sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)), sum(coalesce(cache_read_tokens, 0)),
    sum(coalesce(cache_write_tokens, 0)), sum(coalesce(reasoning_tokens, 0)), sum(cost_usd), sum(partial)
FROM requests WHERE rowid > ? GROUP BY 1, 2, 3, 5, 6, 7
ON CONFLICT (hour, pool, row_id, model, endpoint, cost_status) DO UPDATE SET
    requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
    cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
    reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
    cost_usd = coalesce(cost_usd, 0) + coalesce(excluded.cost_usd, 0)"""


def build(path: Path, n: int, keys: int, now: float) -> tuple[int, float]:
    """A ledger of *n* requests on *keys* keys: the first :data:`WRITER_ROWS` through the
    ledger's writer (``write_batch``, rows and roll-ups; its time is returned with their
    count), the rest by SQLite in one transaction, rolled up the same way."""
    rng = random.Random(29)
    conn = open_ledger(path, write=True)
    first = min(n, WRITER_ROWS)
    start = time.perf_counter()
    batch: list[Spent] = []
    for i in range(first):
        k = i * 7919 % keys
        batch.append(Spent(now - rng.random() * 6.9 * 86400, f"pool{k % 7}", f"k{k:04d}", f"sk-…{k:04d}",
                           model=f"model-{k % 13}", endpoint="openai", input_tokens=rng.randrange(5000),
                           output_tokens=rng.randrange(2000), cache_read_tokens=rng.randrange(1000),
                           reasoning_tokens=0, cost_usd=rng.random() / 100, cost_status="estimated"))
        if len(batch) == 50_000:
            write_batch(conn, batch)
            batch = []
    if batch:
        write_batch(conn, batch)
    took = time.perf_counter() - start
    if n > first:
        conn.execute("BEGIN IMMEDIATE")
        last = conn.execute("SELECT max(rowid) FROM requests").fetchone()[0] or 0
        conn.execute(_FILL, (first, n - 1, now, keys, keys, keys, keys))
        conn.execute(_ROLL_ALL, (last,))
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return first, took


SQL = ("SELECT pool, row_id, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
       "sum(cache_write_tokens), sum(reasoning_tokens), sum(cost_usd) FROM requests WHERE at >= ? "
       "GROUP BY pool, row_id")


def ledger_part(n: int, keys: int, rounds: int) -> None:
    from tui.cli import entry

    tmp = Path(tempfile.mkdtemp(prefix="bench-usage-ledger-"))
    home = tmp / "home"
    home.mkdir(mode=0o700)
    path = ledger_path(home)
    now = time.time()
    written, took = build(path, n, keys, now)
    size = sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.exists(p))
    verb, plain, scan = [], [], []
    for _ in range(rounds):
        t = time.perf_counter()
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            code = entry.main(["usage", "--home", str(home), "--since", "30d", "--json"])
        verb.append(time.perf_counter() - t)
        assert code == 0
        t = time.perf_counter()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as c:
            got = c.execute(SQL, (now - 30 * 86400,)).fetchall()
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as c:
            c.execute(SQL.replace("WHERE at", "WHERE +at"), (now - 30 * 86400,)).fetchall()
        scan.append(time.perf_counter() - t)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        entry.main(["usage", "--home", str(home), "--since", "30d", "--json"])
    doc = json.loads(out.getvalue())
    total = sum(p["totals"]["requests"] for p in doc["pools"].values())
    v, s, sc = statistics.median(verb), statistics.median(plain), statistics.median(scan)
    print(f"2. usage --since 30d --json over {n:,} requests on {keys:,} keys, median of {rounds} "
          f"(load {os.getloadavg()[0]:.2f}):")
    print(f"   the verb {v * 1000:.0f} ms; one SQL query {s * 1000:.0f} ms as sqlite plans it (the at index), "
          f"{sc * 1000:.0f} ms as a scan ({len(got)} groups)")
    print(f"   verb / query: {v / s:.2f}x, verb / scan: {v / sc:.2f}x (goal <= 1.5x); the verb counted "
          f"{total:,} requests")
    print(f"3. ledger size: {size / 1e6:.1f} MB for {n:,} requests = {size / n * 1e6 / 1e6:.1f} MB per million; "
          f"the ledger's writer took {written:,} of them at {written / took:,.0f} rows/s with their hourly "
          f"roll-ups (the rest made by SQLite itself)")
    for p in tmp.rglob("*"):
        if p.is_file():
            p.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--no-proxy", action="store_true", help="only the ledger's figures")
    ap.add_argument("--no-ledger", action="store_true", help="only the proxy's figures")
    args = ap.parse_args(argv)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_proxy:
        proxy_part(args.seconds, args.rounds)
    if not args.no_ledger:
        ledger_part(args.requests, args.keys, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
