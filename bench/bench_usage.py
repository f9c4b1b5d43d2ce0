"""Benchmark: what the usage ledger costs (#29), in one run.

    .venv/bin/python bench/bench_usage.py [--seconds 2] [--rounds 7] [--requests 1000000] [--keys 1000]

1. The proxy with the ledger on against the same proxy with it off (``usage: {ledger:
   false}``), each as a ratio to the bare aiohttp passthrough (``bench/bare_proxy.py``) on
   the same loopback fake provider (which reports usage in every answer). The three targets
   are measured in ``--rounds`` interleaved rounds (each first, second and last in turn; a
   shared machine's load changes between two measurements); each round gives each proxy's
   ratio to that round's passthrough, printed as the median of the rounds with their
   min-max: p50 latency at concurrency 1 and 16, and each process's CPU time per request
   (read from /proc: the ledger's writer thread counted; the machine's other load moves it
   far less than a latency). Goal: ledger on within 1.05x of ledger off, as ratios to the
   passthrough.
2. ``hermes-admin usage --since 30d --json`` over a ledger of ``--requests`` requests on
   ``--keys`` keys, in a home whose auth.json holds those keys (their labels in the JSON,
   their secrets in the output's redactor): in-process (the verb's own code, its JSON
   written to /dev/null through the CLI's output boundary) and as a process (start-up
   included), against the same aggregate as one SQL query through the ``sqlite3`` module
   over the per-request rows (as sqlite plans it, and as a scan; the faster is the
   baseline). Goal: within 1.5x. Also against the same aggregate over the hourly
   roll-ups, which the verb reads for a window's whole hours: what the verb adds to its
   own SQL (the per-credential JSON and the output's redaction).
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
from collections.abc import Callable
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


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process *pid* has used so far, every thread counted."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(url: str, pid: int, seconds: float) -> dict[str, float]:
    """p50 latencies at concurrency 1 and 16, and the target's CPU microseconds per request
    over both (its own process's CPU time: the machine's other load barely moves it)."""
    cpu = cpu_seconds(pid)
    c1 = bp.run_load(url, bp.KEYS[0], 1, count=int(400 * seconds / 3) or 100)
    c16 = bp.run_load(url, bp.KEYS[0], 16, seconds=seconds)
    served = len(c1["latencies"]) + len(c16["latencies"])
    return {"c1_p50": bp.pct(c1["latencies"], 50), "c16_p50": bp.pct(c16["latencies"], 50),
            "cpu_us": (cpu_seconds(pid) - cpu) / max(1, served) * 1e6, "errors": c1["errors"] + c16["errors"]}


def spread(values: list[float]) -> str:
    """The median of *values* with their range: ``1.012x (0.981-1.044)``."""
    return f"{statistics.median(values):.3f}x ({min(values):.3f}-{max(values):.3f})"


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
        pids = {"bare": bare.pid, "ledger-on": on.pid, "ledger-off": off.pid}
        for url in targets.values():
            bp.run_load(url, bp.KEYS[0], 16, seconds=1.0)       # warm up
        runs: dict[str, list[dict]] = {k: [] for k in targets}
        names = list(targets)
        for r in range(rounds):
            order = names[r % 3:] + names[:r % 3]               # each target first, second and last in turn
            for name in order if r % 2 == 0 else reversed(order):
                runs[name].append(latency(targets[name], pids[name], seconds))
        got = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in runs.items()}
        print(f"1. proxy latency, {rounds} interleaved rounds (load {os.getloadavg()[0]:.2f}); medians:")
        for name, g in got.items():
            print(f"   {name:11} c1 p50 {g['c1_p50']:.3f} ms   c16 p50 {g['c16_p50']:.3f} ms   "
                  f"CPU {g['cpu_us']:.0f} us/request   errors {sum(x['errors'] for x in runs[name]):.0f}")
        print("   per round, each as a ratio to the bare passthrough of the same round: median (min-max)")
        for fig in ("c1_p50", "c16_p50", "cpu_us"):
            on_r = [o[fig] / b[fig] for o, b in zip(runs["ledger-on"], runs["bare"], strict=True)]
            off_r = [o[fig] / b[fig] for o, b in zip(runs["ledger-off"], runs["bare"], strict=True)]
            both = [a / b for a, b in zip(on_r, off_r, strict=True)]
            print(f"   {fig}: ledger on {spread(on_r)} bare, off {spread(off_r)} bare; "
                  f"on/off {spread(both)} (goal <= 1.05x)")
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
# The same aggregate over the hourly roll-ups (what the verb reads for a window's whole hours).
SQL_HOURLY = ("SELECT pool, row_id, sum(requests), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
              "sum(cache_write_tokens), sum(reasoning_tokens), sum(cost_usd) FROM hourly WHERE hour >= ? "
              "GROUP BY pool, row_id")


def bench_home(home: Path, keys: int) -> None:
    """auth.json of the ledger's *keys* (their labels in the verb's JSON, their secrets in the
    output's redactor, each with a tail of its own as real keys have), as a home whose proxy
    kept that ledger has."""
    pools: dict[str, list[dict]] = {}
    for k in range(keys):
        pools.setdefault(f"pool{k % 7}", []).append(
            {"id": f"k{k:04d}", "label": f"bench key {k}", "auth_type": "api_key", "priority": k // 7,
             "source": "manual", "access_token": f"sk-or-v1-{'0123456789abcdef' * 4}{k:04d}",
             "last_status": None, "request_count": 0})
    (home / "auth.json").write_text(json.dumps({"version": 1, "providers": {}, "credential_pool": pools}))
    (home / "auth.json").chmod(0o600)


def ledger_part(n: int, keys: int, rounds: int) -> None:
    from tui.cli import entry

    tmp = Path(tempfile.mkdtemp(prefix="bench-usage-ledger-"))
    home = tmp / "home"
    home.mkdir(mode=0o700)
    bench_home(home, keys)
    path = ledger_path(home)
    now = time.time()
    written, took = build(path, n, keys, now)
    size = sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if os.path.exists(p))
    argv = ["usage", "--home", str(home), "--since", "30d", "--json"]
    exe = Path(sys.executable).parent / "hermes-admin"

    def verb() -> None:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            assert entry.main(argv) == 0

    def process() -> None:
        subprocess.run([str(exe), *argv], stdout=subprocess.DEVNULL, check=True)

    def query(sql: str, *args: object) -> None:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as c:
            c.execute(sql, args).fetchall()

    since = now - 30 * 86400
    runs: dict[str, Callable[[], None]] = {
        "verb": verb, "process": process, "planned": lambda: query(SQL, since),
        "scan": lambda: query(SQL.replace("WHERE at", "WHERE +at"), since),
        "rollups": lambda: query(SQL_HOURLY, int(since // 3600))}
    times: dict[str, list[float]] = {k: [] for k in runs}
    verb()                                      # the verb's own modules loaded, as in a process
    for r in range(rounds):
        names = list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]     # interleaved, each first in turn
        for name in names:
            t = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        entry.main(argv)
    doc = json.loads(out.getvalue())
    total = sum(p["totals"]["requests"] for p in doc["pools"].values())
    med = {k: statistics.median(v) for k, v in times.items()}
    groups = sum(len(p["credentials"]) for p in doc["pools"].values())
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as c:
        rolled = c.execute("SELECT count(*) FROM hourly").fetchone()[0]
    print(f"2. usage --since 30d --json over {n:,} requests on {keys:,} keys ({rolled:,} hourly roll-up rows), "
          f"{rounds} interleaved rounds (load {os.getloadavg()[0]:.2f}); medians:")
    print(f"   the verb in-process {med['verb'] * 1000:.0f} ms, as a process (start-up included) "
          f"{med['process'] * 1000:.0f} ms; its JSON {len(out.getvalue()) / 1000:.0f} kB, {groups:,} credentials")
    print(f"   one SQL query over the rows: {med['planned'] * 1000:.0f} ms as sqlite plans it (the at index), "
          f"{med['scan'] * 1000:.0f} ms as a scan; over the roll-ups {med['rollups'] * 1000:.0f} ms")
    for name, base in (("the faster query over the rows", min(med["planned"], med["scan"])),
                       ("the query over the roll-ups", med["rollups"])):
        fast = "planned" if base == med["planned"] else "scan" if base == med["scan"] else "rollups"
        ratios = [v / b for v, b in zip(times["verb"], times[fast], strict=True)]
        procs = [v / b for v, b in zip(times["process"], times[fast], strict=True)]
        print(f"   against {name}: in-process {spread(ratios)}, as a process {spread(procs)}"
              + (" (goal <= 1.5x)" if fast != "rollups" else " (what the verb adds to its own SQL)"))
    print(f"   the verb counted {total:,} requests")
    print(f"3. ledger size: {size / 1e6:.1f} MB for {n:,} requests = {size / n * 1e6 / 1e6:.1f} MB per million; "
          f"the ledger's writer took {written:,} of them at {written / took:,.0f} rows/s "
          f"({took / written * 1e6:.0f} us a row, on its own thread) with their hourly roll-ups "
          f"(the rest made by SQLite itself)")
    for p in tmp.rglob("*"):
        if p.is_file():
            p.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=7)
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
