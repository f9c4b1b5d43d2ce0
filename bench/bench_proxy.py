"""Benchmark: direct vs hermes-admin proxy vs its floors (a bare aiohttp passthrough, nginx)
vs LiteLLM proxy, in one run, same upstream.

    .venv/bin/python bench/bench_proxy.py [--seconds 3] [--rounds 3] [--no-litellm] [--no-nginx]
                                          [--client raw|aiohttp] [--compare TREE]
                                          [--ablate PART[,PART]]...

One loopback fake provider (``python -m tui.demo.fake_provider``, its own process) serves
every target, including a bare aiohttp passthrough (``bench/bare_proxy.py``: no pool, no
outcome handling; the floor any aiohttp proxy pays on this machine) on each event loop, and
nginx (``proxy_pass`` with upstream keep-alive, one worker: the physical limit of a proxy
here); the same four keys are in hermes-admin's pool and in LiteLLM's model list.
hermes-admin runs twice, on asyncio's loop (its default) and on uvloop
(``HERMES_ADMIN_PROXY_LOOP=uvloop``), each compared with the passthrough on the same loop:
uvloop becomes the default only if it is the faster here.
The load generator (``bench/proxy_load.py``) runs in its own process, one per measurement: by default a
small asyncio-streams HTTP/1.1 client (``--client raw``) that costs far less CPU per request
than aiohttp's ClientSession (``--client aiohttp``, the earlier generator). On a 2-core machine
the generator, the upstream and the proxy share the cores, so a costly generator inflates every
target's figures, the proxy's most. Reported per target: latency p50/p99 at concurrency 1 and 16, throughput at
saturation (concurrency 64, non-streaming) and streaming time to first byte; and for the
proxies the latency they add over direct, as figures and as a ratio to LiteLLM's. Every
target is measured ``--rounds`` times, the targets interleaved, and each figure is the
median of its rounds: on a shared machine the load changes between two measurements.

``--compare TREE`` also measures the proxy of another source tree in the same interleaved
rounds (``hermes-admin@ref``; e.g. ``git archive main store tui | tar -x -C /tmp/ref``), and
each hermes-admin's ratio to the bare passthrough is printed: on a shared machine a
before/after measured in two runs differs more by the load than by the change.
``--ablate PART[,PART]`` (repeatable) also measures hermes-admin with those parts of its work
taken out (``bench/proxy_ablated.py``; a measurement, never a way to run): what its promises
cost in latency, judged against the passthrough as hermes-admin is.

LiteLLM is installed by this script into ``.cache/litellm-venv`` (``pip install
'litellm[proxy]'``) and nginx from Debian (``apt-get install nginx-light``, as root); when
either cannot be installed or does not start, the script says so and reports the others.

The goals are ratios in one run (an absolute figure says more about the machine's load
than about the proxy): hermes-admin's added latency at c1 and c16, and its streaming
first-byte latency (added, and whole), within 1.1x the bare passthrough's on the same loop,
at most 0.05x LiteLLM's, throughput at least 0.45x direct;
its distance from nginx is reported beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.proxy_alternate import alternate  # noqa: E402 - after the tree is on the path
from bench.proxy_figures import report  # noqa: E402
from bench.proxy_peers import LITELLM_MASTER, free_port, start_litellm, start_nginx, wait_until  # noqa: E402

PY = sys.executable
KEYS = [f"sk-or-v1-bench-{i:032d}" for i in range(4)]


CLIENT = "raw"       # the load generator: "raw" (asyncio streams) or "aiohttp" (--client)


def run_load(url: str, key: str, concurrency: int, *, seconds: float = 0, count: int = 0,
             stream: bool = False) -> dict:
    """One measurement by bench/proxy_load.py in a fresh process (it does not share our GIL)."""
    args = [PY, str(ROOT / "bench" / "proxy_load.py"), url, key, str(concurrency), "--seconds", str(seconds),
            "--count", str(count), "--client", CLIENT] + (["--stream"] if stream else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    return json.loads(out)


# --- targets ---------------------------------------------------------------------------------

def start_fake(tmp: Path) -> tuple[subprocess.Popen, str]:
    port_file = tmp / "fake.port"
    proc = subprocess.Popen([PY, "-m", "tui.demo.fake_provider", "--port", "0", "--port-file", str(port_file)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wait_until(lambda: port_file.exists(), 20, "the fake provider")
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def bench_home(home: Path, upstream: str) -> None:
    """A home at *home* whose ``openrouter`` pool holds the bench keys, all on *upstream*."""
    home.mkdir(mode=0o700)
    rows = [{"id": f"b{i}", "label": f"bench-{i}", "auth_type": "api_key", "priority": i, "source": "manual",
             "access_token": k, "base_url": upstream + "/api/v1", "last_status": None, "request_count": 0}
            for i, k in enumerate(KEYS)]
    auth = home / "auth.json"
    auth.write_text(json.dumps({"version": 1, "providers": {}, "credential_pool": {"openrouter": rows}}))
    auth.chmod(0o600)
    (home / "config.yaml").write_text("model:\n  provider: openrouter\n  default: fake-model\n")


def start_ours(tmp: Path, upstream: str, tree: Path | None = None, extra: tuple[str, ...] = (), name: str = "home",
               loop: str | None = None, wrap: list[str] | None = None) -> tuple[subprocess.Popen, str]:
    """hermes-admin's proxy on a home of the bench keys; *tree*: another checkout's source
    (its ``store`` and ``tui`` first on PYTHONPATH), to measure two versions in one run;
    *extra*: more ``proxy`` arguments (``--no-metrics``), on a home called *name*;
    *loop*: ``asyncio`` or ``uvloop`` (None: the proxy's default); *wrap*: the command that
    runs the CLI instead of ``hermes-admin`` (``bench/proxy_profiled.py``)."""
    home = tmp / (name if tree is None else f"{name}-{tree.name}")
    if loop is not None:
        home = home.with_name(home.name + "-" + loop)
    bench_home(home, upstream)
    exe = Path(PY).parent / "hermes-admin"
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    if loop is not None:
        env["HERMES_ADMIN_PROXY_LOOP"] = loop
    proc = subprocess.Popen([*(wrap or [str(exe)]), "proxy", "--home", str(home), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    if "http://" not in line:
        raise SystemExit(f"hermes-admin proxy did not start: {line!r}")
    return proc, line.split()[3]


def start_bare(tmp: Path, upstream: str, loop: str = "asyncio", wrap: tuple[str, ...] = (),
               ready: float = 20) -> tuple[subprocess.Popen, str]:
    """bench/bare_proxy.py: the cost of aiohttp alone (the floor for any aiohttp proxy) on *loop*;
    *wrap*: a command that runs it (``valgrind ...``), given *ready* seconds to listen."""
    port_file = tmp / f"bare-{loop}.port"
    proc = subprocess.Popen([*wrap, PY, str(ROOT / "bench" / "bare_proxy.py"), upstream + "/api/v1", str(port_file),
                             loop], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: port_file.exists() and port_file.read_text().strip(), ready, "the bare aiohttp passthrough")
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


def start_floor(tmp: Path, upstream: str, loop: str = "asyncio", session: str = "ours", wrap: tuple[str, ...] = (),
                ready: float = 30) -> tuple[subprocess.Popen, str]:
    """bench/proxy_floor.py (select, attach, forward, judge only) on a home of the bench keys, on
    *loop*, with the proxy's upstream session or (*session* ``bare``) the passthrough's; *wrap*
    and *ready* as for :func:`start_bare`."""
    home = tmp / f"floor-{loop}-{session}"
    bench_home(home, upstream)
    port_file = tmp / f"floor-{loop}-{session}.port"
    proc = subprocess.Popen([*wrap, PY, str(ROOT / "bench" / "proxy_floor.py"), str(home), str(port_file), loop,
                             session], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: port_file.exists() and port_file.read_text().strip(), ready, "the floor proxy")
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


# --- measuring --------------------------------------------------------------------------------

def stop_all(procs: list[subprocess.Popen], tmp: Path) -> None:
    """Terminate every target (bounded, then killed) and remove the run's folder."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(tmp, ignore_errors=True)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


def measure(url: str, key: str, seconds: float) -> dict:
    run_load(url, key, 16, seconds=1.0)                       # warm up connections and caches
    c1 = run_load(url, key, 1, count=int(400 * seconds / 3) or 100)
    c16 = run_load(url, key, 16, seconds=seconds)
    sat = run_load(url, key, 64, seconds=seconds)
    st = run_load(url, key, 1, count=int(200 * seconds / 3) or 50, stream=True)
    return {
        "c1_p50": pct(c1["latencies"], 50), "c1_p99": pct(c1["latencies"], 99),
        "c16_p50": pct(c16["latencies"], 50), "c16_p99": pct(c16["latencies"], 99),
        "rps": len(sat["latencies"]) / sat["wall"], "ttfb_p50": pct(st["latencies"], 50),
        "ttfb_p99": pct(st["latencies"], 99),
        "errors": c1["errors"] + c16["errors"] + sat["errors"] + st["errors"],
    }


def combine(runs: list[dict]) -> dict:
    """Per figure, the median over the rounds (errors: the sum)."""
    return {k: sum(r[k] for r in runs) if k == "errors" else statistics.median(r[k] for r in runs)
            for k in runs[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--no-nginx", action="store_true")
    ap.add_argument("--rounds", type=int, help="measure every target this many times, interleaved; report "
                    "the medians (default 3; with --alternate 24, and their interquartile range)")
    ap.add_argument("--alternate", action="store_true", help="direct, the passthroughs and hermes-admin in short "
                    "alternating bursts from one load process, ratios per round (bench/proxy_alternate.py)")
    ap.add_argument("--bursts", type=int, default=10, help="--alternate: bursts of each kind a round, per target")
    ap.add_argument("--per", type=int, nargs=3, default=[20, 8, 10], metavar=("C1", "C16", "STREAM"),
                    help="--alternate: requests a burst at c1, a connection a burst at c16, streams a burst")
    ap.add_argument("--floor", action="store_true", help="--alternate: also bench/proxy_floor.py (select, attach, "
                    "forward, judge only), judged against the passthrough as hermes-admin is")
    ap.add_argument("--no-uvloop", action="store_true", help="asyncio's loop only (fewer targets a round)")
    ap.add_argument("--client", choices=("raw", "aiohttp"), default="raw",
                    help="load generator: raw asyncio streams (default, cheap) or aiohttp's ClientSession")
    ap.add_argument("--compare", type=Path, metavar="TREE",
                    help="also measure the proxy of another source tree (e.g. `git archive main store tui`"
                         " unpacked), interleaved in the same rounds: a before/after on one machine load")
    ap.add_argument("--ablate", metavar="PART[,PART]", action="append", default=[],
                    help="also hermes-admin with those parts of its work taken out (bench/proxy_ablated.py; "
                         "repeatable): what its promises cost in latency")
    args = ap.parse_args(argv)
    global CLIENT
    CLIENT = args.client
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    procs: list[subprocess.Popen] = []
    try:
        fake, upstream = start_fake(tmp)
        procs.append(fake)
        ours, ours_url = start_ours(tmp, upstream)
        procs.append(ours)
        targets = {"direct": (upstream + "/api/v1", KEYS[0]), "hermes-admin": (ours_url, "any-bearer")}
        if not args.no_uvloop:
            uv, uv_url = start_ours(tmp, upstream, loop="uvloop")
            procs.append(uv)
            targets["hermes-admin/uvloop"] = (uv_url, "any-bearer")
        if args.compare is not None:
            ref, ref_url = start_ours(tmp, upstream, args.compare.resolve())
            procs.append(ref)
            targets["hermes-admin@ref"] = (ref_url, "any-bearer")
        for i, parts in enumerate(args.ablate):    # hermes-admin with promises taken out (a measurement only)
            abl, abl_url = start_ours(tmp, upstream, name=f"ablated{i}",
                                      wrap=[PY, str(ROOT / "bench" / "proxy_ablated.py"), parts])
            procs.append(abl)
            targets[f"hermes-admin without {parts}"] = (abl_url, "any-bearer")
        if args.floor:      # the necessary work alone: whether a pool proxy can meet the goal here at all
            floor, floor_url = start_floor(tmp, upstream)
            procs.append(floor)
            targets["floor/asyncio"] = (floor_url, "any-bearer")
        for loop in ("asyncio",) if args.no_uvloop else ("uvloop", "asyncio"):
            bare, bare_url = start_bare(tmp, upstream, loop)
            procs.append(bare)
            targets[f"bare-aiohttp/{loop}"] = (bare_url, KEYS[0])
        if args.alternate:       # nginx and LiteLLM are measured in the sequential mode only
            pids = dict(zip(targets, [p.pid for p in procs], strict=True))    # started in the targets' order
            alternate({n: (url, pids[n]) for n, (url, _) in targets.items()}, KEYS[0], args.rounds or 24,
                      args.bursts, *args.per, shlex.join([os.path.relpath(PY), *sys.argv]))
            return 0
        if not args.no_nginx:
            started = start_nginx(tmp, upstream)
            if started is not None:
                procs.append(started[0])
                targets["nginx"] = (started[1], KEYS[0])
        if not args.no_litellm:
            port = free_port()
            ll = start_litellm(tmp, upstream, port, KEYS)
            if ll is not None:
                procs.append(ll)
                targets["litellm"] = (f"http://127.0.0.1:{port}/v1", LITELLM_MASTER)
        print(f"upstream {upstream}; {os.cpu_count()} CPUs; {args.seconds:g} s per run; "
              f"{CLIENT} load generator; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
              flush=True)
        runs: dict[str, list[dict]] = {name: [] for name in targets}
        args.rounds = args.rounds or 3
        for r in range(args.rounds):
            # Rounds alternate the order, so a change in the machine's load between two
            # measurements does not always land on the same target.
            order = list(targets.items()) if r % 2 == 0 else list(reversed(targets.items()))
            for name, (url, key) in order:
                print(f"round {r + 1}/{args.rounds}: measuring {name} (load average "
                      f"{os.getloadavg()[0]:.2f}) ...", flush=True)
                runs[name].append(measure(url, key, args.seconds))
        results = {name: combine(runs[name]) for name in targets}
        report(results)
        if args.rounds > 1:
            print(f"(each figure: the median of {args.rounds} rounds; errors: their sum)")
        print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"\nmedian of per-target c16 p50: {statistics.median(r['c16_p50'] for r in results.values()):.2f} ms")
    finally:
        stop_all(procs, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
