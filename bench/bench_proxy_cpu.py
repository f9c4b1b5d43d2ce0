"""Benchmark: the proxy process's CPU time per request, hermes-admin against the bare
aiohttp passthrough, in one run: what sets the added latency on a quiet machine, measured
in a way the machine's load barely moves.

    .venv/bin/python bench/bench_proxy_cpu.py [--count 3000] [--rounds 3] [--loop asyncio|uvloop]
                                              [--compare TREE] [--floor] [--ablate PART]...
                                              [--profile] [--top 20]

The same targets as ``bench/bench_proxy.py`` (one loopback fake provider, its own process;
``bench/bare_proxy.py`` on the same event loop; hermes-admin on a home of four keys), the
same load generator (``bench/proxy_load.py``, a process per measurement). For each target
and each kind of request (``c1``: one at a time; ``c16``: sixteen at once; ``stream``: an
SSE answer, one at a time) the proxy's user+system CPU time (``/proc/PID/stat``) is read
before and after *count* requests, and divided by them. Wall time on a shared 2-core
machine follows the other processes' load; the CPU a process spends on a request does not,
much (caches and frequency aside), so the ratio hermes-admin / bare is the figure to cut.

The proxy's background work (the status file and count flush every second) is CPU spent
per second, not per request: its rate is measured while idle before the rounds and
printed, and each per-request figure is given as measured and less that rate over the
measurement's wall time.

``--floor``: also ``bench/proxy_floor.py``, the proxy's necessary work only (select a row,
attach its key, forward, judge the answer) on the bare passthrough's server: hermes-admin less
the floor is what its other promises cost; the floor less the bare passthrough, the price of
a pool and a verdict; ``floor/bare-session``, the same with the passthrough's upstream session
(what the proxy's session settings cost).

``--ablate PART[,PART]`` (repeatable): also hermes-admin with those parts of its work taken
out (``bench/proxy_ablated.py``: ``log``, ``stats``, ``usage``, ``redaction``, ``verdict``,
``door``, ``headroom``, ``marks``, ``timeouts``), and what each costs: the CPU per request with
it less without it, in the same rounds.

``--compare TREE`` (repeatable): also the proxy of another source tree, named by its folder
(a before/after in the same run; ``git archive REF store tui | tar -x -C /tmp/ref``).
``--profile``: after the rounds, hermes-admin once more under cProfile (``bench/proxy_profiled.py``,
profiling only the requests, in CPU time) for *count* requests of each kind; the top ``--top``
functions by own time, and by cumulative time, then the path in stages (``bench/proxy_stages.py``:
each stage's share of the profile and, after rounds, that share of the measured CPU per request
in microseconds); ``--keep-profile FILE`` keeps its pstats file.
"""

from __future__ import annotations

import argparse
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import KEYS, run_load, start_bare, start_fake, start_floor, start_ours, stop_all  # noqa: E402
from bench.proxy_stages import print_stages  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
KINDS = ("c1", "c16", "stream")
# The work the proxy does once the client has its answer (docs/proxy.md, "What a request costs").
AFTER_THE_BYTES = {("relay.py", "_judge"), ("spend.py", "hand_over"), ("requests.py", "_end_later")}


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of process *pid* so far (every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK      # utime, stime: fields 14 and 15


def drive(url: str, key: str, kind: str, count: int) -> None:
    concurrency = 16 if kind == "c16" else 1
    out = run_load(url, key, concurrency, count=count, stream=kind == "stream")
    if out["errors"]:
        raise SystemExit(f"{url}: {out['errors']} error(s) in a {kind} run")


def per_request(pid: int, url: str, key: str, kind: str, count: int, idle_rate: float) -> tuple[float, float]:
    """CPU ms per request of *pid* over *count* requests of *kind*: as measured, and less
    the idle rate over the wall time."""
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    drive(url, key, kind, count)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    spent = c1 - c0
    return spent / count * 1000, max(0.0, spent - idle_rate * (t1 - t0)) / count * 1000


def idle_rate(pid: int, seconds: float = 3.0) -> float:
    """CPU seconds per second the process spends with no request."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def profile(tmp: Path, upstream: str, count: int, top: int, loop: str, keep: Path | None = None,
            cpu_ms: float | None = None) -> None:
    stats_file = keep.resolve() if keep is not None else tmp / "proxy.prof"
    stats_file.unlink(missing_ok=True)
    proc, url = start_ours(tmp, upstream, name="profiled", loop=loop,
                           wrap=[sys.executable, str(ROOT / "bench" / "proxy_profiled.py"), str(stats_file)])
    try:
        for kind in KINDS:                         # warm: connections, caches
            drive(url, "any-bearer", kind, 200)
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.2)                            # the handler runs on the loop's next turn
        for kind in KINDS:
            drive(url, "any-bearer", kind, count)
        proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 20
        while not stats_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(15)
    if not stats_file.exists():
        print("no profile written")
        return
    st = pstats.Stats(str(stats_file))
    st.strip_dirs()
    print(f"\nhermes-admin under cProfile, {count} requests of each of {', '.join(KINDS)} "
          f"(CPU time of the loop's thread; cProfile slows every call: the shares matter, not the times):")
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    after = sum(v[3] for (file, _line, name), v in st.stats.items()  # type: ignore[attr-defined]
                if (file, name) in AFTER_THE_BYTES)
    # A body's verdict (relay._judge) runs inside the request's one deferred callback: once.
    after -= sum(cv[3] for (file, _line, name), v in st.stats.items()  # type: ignore[attr-defined]
                 if (file, name) == ("relay.py", "_judge")
                 for (cfile, _cl, cname), cv in v[4].items() if (cfile, cname) == ("requests.py", "_end_later"))
    print(f"after the client's bytes (the verdict, the usage hand-over, the log line): {after:.2f} s of "
          f"{st.total_tt:.2f} s of the loop's CPU = {after / st.total_tt:.0%}")  # type: ignore[attr-defined]
    print_stages(pstats.Stats(str(stats_file)), cpu_ms)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000, help="requests per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    ap.add_argument("--compare", type=Path, metavar="TREE", action="append", default=[],
                    help="also the proxy of this source tree (repeatable)")
    ap.add_argument("--floor", action="store_true",
                    help="also bench/proxy_floor.py: the necessary work only (select, attach, forward, judge)")
    ap.add_argument("--ablate", metavar="PART[,PART]", action="append", default=[],
                    help="also hermes-admin without PART (bench/proxy_ablated.py; repeatable)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--keep-profile", type=Path, metavar="FILE",
                    help="with --profile: keep the pstats file (e.g. to read a function's callees)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-cpu-"))
    procs: list[subprocess.Popen] = []
    try:
        fake, upstream = start_fake(tmp)
        procs.append(fake)
        targets: dict[str, tuple[int, str, str]] = {}
        ours, url = start_ours(tmp, upstream, loop=args.loop)
        procs.append(ours)
        targets["hermes-admin"] = (ours.pid, url, "any-bearer")
        for tree in args.compare:
            ref, ref_url = start_ours(tmp, upstream, tree.resolve(), loop=args.loop)
            procs.append(ref)
            targets[f"hermes-admin@{tree.name}"] = (ref.pid, ref_url, "any-bearer")
        for part in args.ablate:
            abl, abl_url = start_ours(tmp, upstream, name=f"without-{part}", loop=args.loop, wrap=[
                sys.executable, str(ROOT / "bench" / "proxy_ablated.py"), part])
            procs.append(abl)
            targets[f"without {part}"] = (abl.pid, abl_url, "any-bearer")
        if args.floor:
            floor, floor_url = start_floor(tmp, upstream, args.loop)
            procs.append(floor)
            targets["floor"] = (floor.pid, floor_url, "any-bearer")
            floor, floor_url = start_floor(tmp, upstream, args.loop, session="bare")
            procs.append(floor)
            targets["floor/bare-session"] = (floor.pid, floor_url, "any-bearer")
        bare, bare_url = start_bare(tmp, upstream, args.loop)
        procs.append(bare)
        targets["bare"] = (bare.pid, bare_url, KEYS[0])
        idle = {}
        for name, (pid, url, key) in targets.items():
            for kind in KINDS:
                drive(url, key, kind, 300)           # warm
            idle[name] = idle_rate(pid)
        print(f"{os.cpu_count()} CPUs; {args.count} requests per measurement; {args.loop} loop; "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("idle CPU (ms per s): " + "  ".join(f"{n} {r * 1000:.2f}" for n, r in idle.items()))
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        if not args.rounds and args.profile:
            profile(tmp, upstream, args.count, args.top, args.loop, args.keep_profile)
            return 0
        for r in range(args.rounds):
            order = list(targets.items()) if r % 2 == 0 else list(reversed(targets.items()))
            for name, (pid, url, key) in order:
                for kind in KINDS:
                    runs.setdefault((name, kind), []).append(
                        per_request(pid, url, key, kind, args.count, idle[name]))
        print(f"\nproxy CPU per request, ms (median of {args.rounds} rounds; in brackets: less the idle rate)")
        print(f"{'target':<20}" + "".join(f"{k:>18}" for k in KINDS))
        med = {key: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
               for key, vals in runs.items()}
        for name in targets:
            print(f"{name:<20}" + "".join(f"{med[name, k][0]:>9.3f} [{med[name, k][1]:.3f}]" for k in KINDS))
        for name in targets:
            if name == "bare":
                continue
            print(f"{name} / bare:  " + "   ".join(
                f"{k} {med[name, k][1] / med['bare', k][1]:.2f}x" for k in KINDS))
        for part in args.ablate:      # what each part costs: hermes-admin with it less without it
            print(f"{part + ' costs (ms):':<34}" + "   ".join(
                f"{k} {med['hermes-admin', k][1] - med['without ' + part, k][1]:+.3f}" for k in KINDS))
        if args.floor:        # what the promises cost, and the price of a pool and a verdict
            print("hermes-admin less the floor (ms):  " + "   ".join(
                f"{k} {med['hermes-admin', k][1] - med['floor', k][1]:+.3f}" for k in KINDS))
            print("the floor less bare (ms):          " + "   ".join(
                f"{k} {med['floor', k][1] - med['bare', k][1]:+.3f}" for k in KINDS))
        print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.profile:     # the stages scaled by the mean of the three kinds (less the idle rate)
            real = statistics.mean(med["hermes-admin", k][1] for k in KINDS)
            profile(tmp, upstream, args.count, args.top, args.loop, args.keep_profile, real)
    finally:
        stop_all(procs, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
