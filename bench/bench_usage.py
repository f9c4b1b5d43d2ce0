"""Benchmark: what the usage ledger costs (#29), in one run.

    .venv/bin/python bench/bench_usage.py [--rounds 9] [--bursts 24] [--per 40] [--only-c1] [--compare TREE] [--ablate]
                                          [--requests 1000000] [--keys 1000] [--no-proxy] [--no-ledger]

1. The proxy with the ledger on against the same proxy with it off (``usage: {ledger:
   false}``), each as a ratio to the bare aiohttp passthrough (``bench/bare_proxy.py``) on
   the same loopback fake provider (which reports usage in every answer). One load process
   (``bench/usage_alternate.py``) holds kept-alive connections to the three targets and sends
   short bursts to each in turn (``--per`` requests at concurrency 1; at 16, a quarter of that
   on each connection), ``--bursts`` bursts a round, ``--rounds`` rounds: neighbouring bursts
   are milliseconds apart, so a shared machine's load, which changes over seconds, weighs on
   the three nearly alike. Per round: each target's p50 latency and CPU time per request (from
   ``/proc/<pid>/task/<tid>/schedstat``: the event loop's thread apart from the others, which
   in the proxy are the usage feed's and the ledger's writer), and each proxy's ratio to that
   round's passthrough (``--compare TREE``: a fourth target, another checkout's proxy with its
   ledger on, the tree before a change; ``--ablate``: one more, the ledger on with its
   writes taken out). Printed: every round's figure, and their median with the
   interquartile range and the range. Goal: ledger on within 1.05x of ledger off, as ratios
   to the passthrough.
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
from proxy_alternate import quartiles, spread  # noqa: E402

from store.usage.ledger import ROLL_SUMS, ledger_path, open_ledger, write_batch  # noqa: E402
from store.usage.record import Spent  # noqa: E402


def start_proxy(tmp: Path, upstream: str, name: str, ledger: bool,
                tree: Path | None = None, ablated: bool = False) -> tuple[subprocess.Popen, str]:
    """hermes-admin's proxy on a home of the bench keys, its ledger on or off; *tree*: another
    checkout's source first on PYTHONPATH (the tree before a change, measured in the same run);
    *ablated*: the ledger's writes taken out (``bench/usage_ablated.py``)."""
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
    env = dict(os.environ, PYTHONPATH=str(tree)) if tree is not None else None
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "usage_ablated.py")] if ablated else [str(exe)]
    proc = subprocess.Popen([*cmd, "proxy", "--home", str(home), "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if "http://" not in line:
        raise SystemExit(f"hermes-admin proxy did not start: {line!r}")
    return proc, line.split()[3]


def alternate(targets: dict[str, tuple[str, int]], concurrency: int, rounds: int, bursts: int,
              per: int) -> dict:
    """One run of bench/usage_alternate.py (a process of its own: it does not share our GIL)."""
    args = [sys.executable, str(Path(__file__).resolve().parent / "usage_alternate.py"), "--key", bp.KEYS[0],
            "--rounds", str(rounds), "--bursts", str(bursts), "--kind", f"{concurrency}:{per}",
            *(f"{name}={url}@{pid}" for name, (url, pid) in targets.items())]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"the load generator failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout)
    return {"rounds": got["kinds"][0]["rounds"], "started": got["started"]}


def report(label: str, got: dict) -> None:
    """Every figure of one concurrency: per round, each target's p50 latency and CPU per
    request (the loop's and its other threads'), and each proxy's ratios to the bare
    passthrough of the same round."""
    runs: dict[str, list[dict]] = got["rounds"]
    rows = {n: [{"p50": statistics.median(r["latencies"]) * 1000, "n": r["sent"],    # CPU: every request sent
                 "loop": r["loop_cpu"] / r["sent"] * 1e6, "threads": r["threads_cpu"] / r["sent"] * 1e6,
                 "cpu": (r["loop_cpu"] + r["threads_cpu"]) / r["sent"] * 1e6} for r in rs]
            for n, rs in runs.items()}
    rounds = len(rows["bare"])
    print(f"   {label}, {rounds} rounds of {rows['bare'][0]['n']} requests a target (load {os.getloadavg()[0]:.2f}):")
    for name, rs in rows.items():
        n = sum(r["n"] for r in rs)
        loop = sum(r["loop"] * r["n"] for r in rs) / n
        threads = sum(r["threads"] * r["n"] for r in rs) / n
        print(f"     {name:14} p50 median {statistics.median(r['p50'] for r in rs):.3f} ms "
              f"(rounds: {' '.join(format(r['p50'], '.3f') for r in rs)}); CPU over the run "
              f"{loop + threads:.0f} us/request = loop {loop:.0f} + other threads {threads:.0f}; "
              f"errors {sum(x['errors'] for x in runs[name])}")
    ons = [n for n in rows if n not in ("bare", "ledger-off")]       # ledger-on, and another tree's (--compare)
    for fig, what in (("p50", "p50 latency"), ("cpu", "CPU/request"), ("loop", "loop CPU/request")):
        off_r = [o[fig] / b[fig] for o, b in zip(rows["ledger-off"], rows["bare"], strict=True)]
        print(f"     {what}: off/bare {spread(off_r)}")
        for name in ons:
            on_r = [o[fig] / b[fig] for o, b in zip(rows[name], rows["bare"], strict=True)]
            both = [a / b for a, b in zip(on_r, off_r, strict=True)]
            print(f"       {name}/bare {spread(on_r)}; {name}/off {spread(both)} (goal <= 1.05x); "
                  f"per round {' '.join(f'{x:.3f}' for x in both)}")
    for name in [*ons, "ledger-off"]:
        n = sum(r["n"] for r in rows[name])
        per: dict[str, float] = {}
        for r in runs[name]:
            for tid, cpu in r["threads"].items():
                per[tid] = per.get(tid, 0.0) + cpu
        since = got["started"][name]
        print(f"     {name}'s threads other than the loop over the run, in the order they started: "
              + (", ".join(f"{cpu / n * 1e6:.1f} us/request" for tid, cpu in
                           sorted(per.items(), key=lambda kv: (since.get(kv[0], 0), int(kv[0]))) if cpu > 0)
                 or "none"))
    extra = [o["threads"] - f["threads"] for o, f in zip(rows["ledger-on"], rows["ledger-off"], strict=True)]
    q1, q2, q3 = quartiles(extra)
    print(f"     the ledger's own threads (on's other threads minus off's, per round): {q2:.1f} us/request "
          f"(IQR {q1:.1f}-{q3:.1f}, range {min(extra):.1f}-{max(extra):.1f})")


def proxy_part(rounds: int, bursts: int, per: int, only_c1: bool, compare: Path | None, ablate: bool) -> None:
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
        targets = {"bare": (bare_url, bare.pid), "ledger-on": (on_url, on.pid), "ledger-off": (off_url, off.pid)}
        if compare is not None:
            other, other_url = start_proxy(tmp, upstream, "on-compared", True, compare)
            procs.append(other)
            targets[f"on@{compare.name}"] = (other_url, other.pid)
        if ablate:
            other, other_url = start_proxy(tmp, upstream, "on-no-writes", True, ablated=True)
            procs.append(other)
            targets["on-no-writes"] = (other_url, other.pid)
        print(f"1. proxy: ledger on and off and the bare passthrough, in short bursts taking turns "
              f"({bursts} bursts a round); medians of the per-round figures with their "
              f"interquartile range and range")
        for c in (1,) if only_c1 else (1, 16):
            each = per if c == 1 else max(1, per // 4)           # about as many requests a burst as at c1 x4
            runs = alternate(targets, c, rounds, bursts, each)
            report(f"concurrency {c}, {each} requests a connection a burst", runs)
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
""" + ROLL_SUMS + """
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
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--bursts", type=int, default=24, help="bursts a round, each target's in turn")
    ap.add_argument("--per", type=int, default=40, help="requests a burst at c1 (a connection at c16: a quarter)")
    ap.add_argument("--compare", type=Path, metavar="TREE",
                    help="also the proxy of another checkout (its source tree), ledger on, in the same run")
    ap.add_argument("--ablate", action="store_true",
                    help="also the proxy with its ledger on but its writes taken out, in the same run")
    ap.add_argument("--only-c1", action="store_true", help="the proxy's figures at concurrency 1 only")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--no-proxy", action="store_true", help="only the ledger's figures")
    ap.add_argument("--no-ledger", action="store_true", help="only the proxy's figures")
    args = ap.parse_args(argv)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_proxy:
        proxy_part(args.rounds, args.bursts, args.per, args.only_c1, args.compare, args.ablate)
    if not args.no_ledger:
        ledger_part(args.requests, args.keys, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
