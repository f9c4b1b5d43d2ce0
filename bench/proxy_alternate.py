"""``bench/bench_proxy.py --alternate``: direct, the bare passthrough and hermes-admin measured
in short alternating bursts from one load process, the goals judged per round.

The sequential mode measures each target for seconds at a time, one after the other; on a
shared 2-core machine the load drifts between two measurements by more than hermes-admin
adds over the passthrough (~0.4 ms of ~1 ms), so the ratio of the two added latencies swung
by 0.3-0.4x from one run to the next. Here one load process (``bench/usage_alternate.py``)
holds kept-alive connections to every target and sends each a short burst in turn, the
order turned every burst: neighbouring bursts are milliseconds apart and see the same load.
Each round runs three kinds of burst: concurrency 1, concurrency 16 (16 connections, each
counted latency had 16 requests in flight throughout) and streams at concurrency 1 (the
first body chunk's latency). Per round and kind: each target's p50 (over the round's
bursts, pooled), its added latency (target p50 - direct p50) and the ratio of
hermes-admin's added latency to the passthrough's on the same event loop. Printed: the
median of the per-round ratios with their interquartile range and range, the ratio of the
pooled p50s over the whole run, each process's CPU per request (``schedstat``), the load
average at the start and the end, and the goal lines computed from those figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

LOAD = Path(__file__).resolve().parent / "usage_alternate.py"
GOAL = 1.1
KINDS = (("c1", "latency at concurrency 1"), ("c16", "latency at concurrency 16"),
         ("stream", "first byte of a stream, concurrency 1"))


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """The first quartile, the median and the third quartile of *values*."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def spread(values: list[float]) -> str:
    """``1.012x (IQR 0.998-1.020, range 0.981-1.044)``: the median, quartiles and range."""
    q1, q2, q3 = quartiles(values)
    return f"{q2:.3f}x (IQR {q1:.3f}-{q3:.3f}, range {min(values):.3f}-{max(values):.3f})"


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def run_load(targets: dict[str, tuple[str, int]], key: str, rounds: int, bursts: int,
             c1: int, c16: int, stream: int) -> dict:
    """One run of the alternating load generator (a process of its own: it does not share our GIL)."""
    args = [sys.executable, str(LOAD), "--key", key, "--rounds", str(rounds), "--bursts", str(bursts),
            "--kind", f"1:{c1}", "--kind", f"16:{c16}", "--kind", f"1:{stream}:stream",
            *(f"{name}={url}@{pid}" for name, (url, pid) in targets.items())]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"the load generator failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout)
    return {name: kind for (name, _), kind in zip(KINDS, got["kinds"], strict=True)}


def pairs(names: list[str]) -> list[tuple[str, str]]:
    """Each hermes-admin (and the floor) and the passthrough on its event loop."""
    out = []
    for n in names:
        if n.startswith(("hermes-admin", "floor")):
            floor = "bare-aiohttp/uvloop" if n.endswith("/uvloop") else "bare-aiohttp/asyncio"
            if floor in names:
                out.append((n, floor))
    return out


def judge(kind: dict, ours: str, floor: str, whole: bool = False) -> tuple[list[float], float]:
    """Per round, *ours*'s added latency over *floor*'s (or with *whole*, its p50 over the
    floor's); and the same from the p50s of all rounds' latencies pooled."""
    rs = kind["rounds"]
    per_round = []
    for o, f, d in zip(rs[ours], rs[floor], rs["direct"], strict=True):
        base = 0.0 if whole else p50(d["latencies"])
        per_round.append(ratio(p50(o["latencies"]) - base, p50(f["latencies"]) - base))
    pooled = {n: p50([x for r in rs[n] for x in r["latencies"]]) for n in (ours, floor, "direct")}
    base = 0.0 if whole else pooled["direct"]
    return per_round, ratio(pooled[ours] - base, pooled[floor] - base)


def report(runs: dict[str, dict], pids: dict[str, int], rounds: int, bursts: int) -> list[str]:
    """Print every figure; returns the goal lines (also printed, last)."""
    goals: list[str] = []
    names = list(runs["c1"]["rounds"])
    for label, title in KINDS:
        kind = runs[label]
        conc, per = kind["concurrency"], kind["per"]
        print(f"\n{title}: {rounds} rounds x {bursts} bursts of {per} requests on each of {conc} "
              f"connection(s) per target")
        rs = kind["rounds"]
        direct = statistics.median(p50(r["latencies"]) for r in rs["direct"])
        for n in names:
            p = [p50(r["latencies"]) for r in rs[n]]
            q1, q2, q3 = quartiles(p)
            cpu = sum(r["loop_cpu"] + r["threads_cpu"] for r in rs[n]) / sum(r["sent"] for r in rs[n]) * 1e6
            if n == "direct":   # its process is the upstream, which serves every target's requests
                cpu /= len(names)
            counted = sum(len(r["latencies"]) for r in rs[n])
            print(f"  {n:<22} p50 {q2:6.3f} ms (IQR {q1:.3f}-{q3:.3f})  added {q2 - direct:+.3f}"
                  f"  CPU {cpu:5.0f} us/request{' (the upstream)' if n == 'direct' else ''}"
                  f"  counted {counted}, fewest in flight {min(r['in_flight'] for r in rs[n])}"
                  f", errors {sum(r['errors'] for r in rs[n])}")
        for ours, floor in pairs(names):
            for whole in (False, True) if label == "stream" else (False,):
                per_round, pooled = judge(kind, ours, floor, whole)
                verdict = "met" if quartiles(per_round)[1] <= GOAL and pooled <= GOAL else "NOT met"
                what = "stream first byte" if whole else f"{label} added latency"
                line = (f"{ours} {what} / {floor}'s: median of rounds {spread(per_round)}, "
                        f"pooled {pooled:.3f}x (goal <= {GOAL}x: {verdict})")
                print(f"  {line}\n    per round: {' '.join(f'{x:.2f}' for x in per_round)}")
                goals.append(line)
    for ours, floor in pairs(names):
        per = {}
        for n in (ours, floor):
            done = [r for k in runs.values() for r in k["rounds"][n]]
            per[n] = sum(r["loop_cpu"] + r["threads_cpu"] for r in done) / sum(r["sent"] for r in done) * 1e6
        print(f"\nCPU per request over the run (all kinds): {ours} {per[ours]:.0f} us, {floor} {per[floor]:.0f} us "
              f"= {ratio(per[ours], per[floor]):.2f}x (pids {pids[ours]}, {pids[floor]})")
    return goals


def alternate(targets: dict[str, tuple[str, int]], key: str, rounds: int, bursts: int,
              c1: int, c16: int, stream: int, command: str) -> None:
    """Measure *targets* (name: (url, pid); ``direct`` first, its pid the upstream's) and print
    the figures, the command line and the load average around the run."""
    print(f"command: {command}")
    print(f"{os.cpu_count()} CPUs; alternating bursts, one load process; load average at the start {loadavg()}",
          flush=True)
    runs = run_load(targets, key, rounds, bursts, c1, c16, stream)
    end = loadavg()
    goals = report(runs, {n: pid for n, (_, pid) in targets.items()}, rounds, bursts)
    print(f"\nload average at the start of the run printed above; at the end {end}")
    print("goals (hermes-admin's added latency within 1.1x the bare passthrough's on the same loop; "
          "met = the median of the rounds and the pooled figure both within):")
    for line in goals:
        print(f"  {line}")
