"""Benchmark: the instructions the proxy executes per request (valgrind's callgrind), hermes-admin
against the bare aiohttp passthrough, in one run: the request path's cost as a count that the
machine's load does not move.

    .venv/bin/python bench/bench_proxy_instr.py [--count 600] [--rounds 2] [--concurrency 16] [--stream]
                                                [--compare TREE]... [--floor] [--ablate PART[,PART]]...

CPU time per request (``bench/bench_proxy_cpu.py``) moves by about ±30 µs between two processes
of the same code on this 2-core machine, more than most single cuts of the request path, so
its before/after needs many rounds and still cannot rank the parts. Instructions do not move
with the load: every target runs under ``valgrind --tool=callgrind`` with counting off until it
has served a warm-up, then counting on for *count* requests of the same load generator
(``bench/proxy_load.py``) at *concurrency*, and the process's total (every thread) is divided
by them. Two rounds of the same code agree within about 1 % here.

What it is not: a time. A cache miss, a page fault and the kernel's side of a system call cost
no instruction here; the CPU-time bench tells those. Requests run some 20 times slower under
valgrind, so work done per second (the status file, the count flush) would weigh 20 times
more per request, and work batched by time (the usage feed's hand-over every 20 ms, the
ledger's transaction every 0.5 s) would share each batch among 20 times fewer answers:
hermes-admin (and each ``--compare`` tree) runs with the first left out and the second's
periods 20 and 10 times longer (``bench/proxy_ablated.py background,batching``), and each
count runs until the ledger has written its answers' rows. The rate of what is left while idle is
measured before each count, the count given as measured and less that rate over its wall time.

``--floor``: also ``bench/proxy_floor.py`` (select, attach, forward, judge only).
``--ablate PART[,PART]``: also hermes-admin without those parts (``bench/proxy_ablated.py``),
and what each costs: the count with it less without it, in the same rounds.
``--compare TREE``: also another source tree's proxy (``git archive REF store tui | tar -x -C
/tmp/ref``).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import KEYS, run_load, start_bare, start_fake, start_floor, start_ours, stop_all  # noqa: E402

READY = 300.0       # seconds a target may take to listen under valgrind
SETTLE = 11.0       # after a load: the ledger's writer takes its rows (every 5 s, with ``batching``)
IDLE = 3.0          # seconds the idle rate is counted over


def callgrind(tmp: Path, name: str) -> tuple[str, ...]:
    return ("valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/cg-{name}.%p")


def control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], capture_output=True, timeout=120, check=False)


def counted(tmp: Path, name: str, pid: int) -> int:
    """The instructions counted in *pid* since the last dump (its dump files read and removed)."""
    control("-d", str(pid))
    deadline = time.monotonic() + 60
    total, files = 0, []
    while not files and time.monotonic() < deadline:
        files = glob.glob(f"{tmp}/cg-{name}.{pid}*")
        time.sleep(0.1)
    time.sleep(0.3)          # every thread's part written
    for f in glob.glob(f"{tmp}/cg-{name}.{pid}*"):
        with open(f) as fh:
            for line in fh:
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
        os.remove(f)
    return total


def measure(tmp: Path, name: str, pid: int, url: str, key: str, args: argparse.Namespace) -> tuple[float, float]:
    """(instructions per request, the same less the idle rate over the count's wall time)."""
    run_load(url, key, args.concurrency, count=300, stream=args.stream)        # warm, not counted
    time.sleep(SETTLE)
    control("-i", "on", str(pid))
    counted(tmp, name, pid)                    # anything between the switch and now: dropped
    t0 = time.monotonic()
    time.sleep(IDLE)
    idle = counted(tmp, name, pid) / (time.monotonic() - t0)
    t0 = time.monotonic()
    run_load(url, key, args.concurrency, count=args.count, stream=args.stream)
    time.sleep(SETTLE)                         # the answers' rows written (counted with them)
    wall = time.monotonic() - t0
    busy = counted(tmp, name, pid)
    control("-i", "off", str(pid))
    return busy / args.count, max(0.0, busy - idle * wall) / args.count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=600, help="requests counted per measurement")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--stream", action="store_true", help="SSE answers")
    ap.add_argument("--compare", type=Path, metavar="TREE", action="append", default=[])
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--ablate", metavar="PART[,PART]", action="append", default=[])
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench_proxy_instr: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-instr-"))
    procs: list[subprocess.Popen] = []
    try:
        fake, upstream = start_fake(tmp)
        procs.append(fake)
        targets: dict[str, tuple[str, int, str, str]] = {}

        def ours(label: str, parts: str, tree: Path | None = None) -> None:
            name = f"t{len(targets)}"
            proc, url = start_ours(tmp, upstream, tree, name=f"home-{name}", wrap=[
                *callgrind(tmp, name), sys.executable, str(ROOT / "bench" / "proxy_ablated.py"), parts])
            procs.append(proc)
            targets[label] = (name, proc.pid, url, "any-bearer")

        ours("hermes-admin", "background,batching")
        for tree in args.compare:
            ours(f"hermes-admin@{tree.name}", "background,batching", tree.resolve())
        for part in args.ablate:
            ours(f"without {part}", "background,batching," + part)
        if args.floor:
            proc, url = start_floor(tmp, upstream, wrap=callgrind(tmp, "floor"), ready=READY)
            procs.append(proc)
            targets["floor"] = ("floor", proc.pid, url, "any-bearer")
        proc, url = start_bare(tmp, upstream, wrap=callgrind(tmp, "bare"), ready=READY)
        procs.append(proc)
        targets["bare"] = ("bare", proc.pid, url, KEYS[0])
        print(f"{os.cpu_count()} CPUs; {args.count} requests counted per measurement at concurrency "
              f"{args.concurrency}{', streamed' if args.stream else ''}; {args.rounds} round(s); "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        runs: dict[str, list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            order = list(targets.items()) if r % 2 == 0 else list(reversed(targets.items()))
            for label, (name, pid, url, key) in order:
                runs.setdefault(label, []).append(measure(tmp, name, pid, url, key, args))
        med = {label: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
               for label, vals in runs.items()}
        print("\nthousand instructions per request (median of the rounds; in brackets: less the idle rate; "
              "each round's)")
        for label, (whole, less) in med.items():
            print(f"  {label:<28} {whole / 1e3:8.1f} [{less / 1e3:8.1f}]   "
                  + " ".join(f"{v[1] / 1e3:.1f}" for v in runs[label]))
        bare = med["bare"][1]
        for label, (_whole, less) in med.items():
            if label != "bare":
                print(f"  {label} / bare: {less / bare:.3f}x")
        for part in args.ablate:
            print(f"  {part} costs {(med['hermes-admin'][1] - med['without ' + part][1]) / 1e3:+.1f} k a request")
        if args.floor:
            print(f"  hermes-admin less the floor: {(med['hermes-admin'][1] - med['floor'][1]) / 1e3:+.1f} k; "
                  f"the floor less bare: {(med['floor'][1] - bare) / 1e3:+.1f} k")
        print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        stop_all(procs, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
