"""The load generator of bench/bench_usage.py and of ``bench/bench_proxy.py --alternate``:
several targets in one process, in short alternating bursts, with each target's CPU time
read from /proc around every round.

    .venv/bin/python bench/usage_alternate.py --key KEY --rounds R --bursts B
                     --kind CONCURRENCY:PER[:stream] [--kind ...] NAME=URL@PID...

Each of R rounds runs every ``--kind`` in turn, and each kind B bursts; a burst sends PER
requests on each of CONCURRENCY kept-alive connections to each target in turn (the order
turns by one every burst, so each target is first, second and last as often). Neighbouring
bursts of two targets are milliseconds apart: the machine's load, which changes over
seconds, is nearly the same for both. A latency is the whole answer's, or with ``stream``
(``"stream": true`` in the request) the first body chunk's. Above concurrency 1 a latency
counts only if its answer ended before the burst's first connection had its last answer,
so each counted request had CONCURRENCY in flight throughout (the burst's ragged end is
left out); the fewest in flight at any counted answer's end is reported, to show it.
Around each round's kind the CPU time of each target's process is read from
``/proc/<pid>/task/*/schedstat``: its main thread (the event loop) apart from its other
threads (for hermes-admin's proxy: the usage feed's and, with the ledger on, the ledger's
writer, each reported apart). Work a thread does after a kind's last burst lands in the
next one; over the run nothing is lost.

Prints one JSON object: ``kinds``, per kind, its ``concurrency``, ``per``, ``stream`` and
``rounds``: per target, per round, the counted latencies (seconds), the requests ``sent``
(the ragged end's included), the errors, ``in_flight`` (the fewest in flight at a counted
answer's end) and the CPU seconds of the loop and of each
other thread; ``started``, per target, when each thread started (to name them in order:
the feed's starts before the ledger's writer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.raw_http import Conn, chat_request, exchange  # noqa: E402 - after the tree is on the path


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of *pid* so far: ``/proc/<pid>/task/<tid>/schedstat`` (its
    time on a CPU in nanoseconds; ``stat``'s clock ticks of 10 ms are too coarse for a round)."""
    out: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0]) / 1e9
        except FileNotFoundError:        # a thread that ended meanwhile
            continue
    return out


def started(pid: int) -> dict[int, int]:
    """When each thread of *pid* started (clock ticks after boot; thread ids wrap around)."""
    out: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = int((task / "stat").read_text().rsplit(")", 1)[1].split()[19])
        except FileNotFoundError:
            continue
    return out


BURST_TIMEOUT = 60.0
T = TypeVar("T")


class Target:
    """One target: its kept-alive connections and its requests' bytes."""

    def __init__(self, url: str, key: str) -> None:
        self.host, self.port, self.request = chat_request(url, key)
        self.streamed = chat_request(url, key, stream=True)[2]
        self.conns: list[Conn] = []

    async def connect(self, n: int) -> None:
        for _ in range(n):           # one by one, each with its first request: none waits on another
            conn = await self.bounded(asyncio.open_connection(self.host, self.port), "a connection")
            await self.bounded(exchange(conn, self.request), "a first request")
            self.conns.append(conn)

    async def burst(self, concurrency: int, per: int, stream: bool, lat: list[float]) -> tuple[int, int]:
        """*per* requests on each of *concurrency* connections; the counted latencies go to
        *lat*. Returns the errors and the fewest requests in flight at a counted answer's end.
        A burst that takes over :data:`BURST_TIMEOUT` seconds (a target that stopped
        answering) ends the run with an error, not a hang."""
        return await self.bounded(self._burst(concurrency, per, stream, lat), "a burst")

    async def bounded(self, work: Coroutine[None, None, T], what: str) -> T:
        try:
            return await asyncio.wait_for(work, BURST_TIMEOUT)
        except TimeoutError:
            raise SystemExit(f"{self.host}:{self.port} did not answer {what} within {BURST_TIMEOUT:g} s") from None

    async def _burst(self, concurrency: int, per: int, stream: bool, lat: list[float]) -> tuple[int, int]:
        request = self.streamed if stream else self.request
        errors = 0
        in_flight = 0
        fewest = concurrency
        ending = False               # a connection has had its last answer: the ragged end begins

        async def worker(conn: Conn) -> None:
            nonlocal errors, in_flight, fewest, ending
            for i in range(per):
                in_flight += 1
                status, first, end = await exchange(conn, request)
                if not ending:
                    lat.append(first if stream else end)
                    fewest = min(fewest, in_flight)
                in_flight -= 1
                errors += status != 200
                ending = ending or (i == per - 1 and concurrency > 1)

        await asyncio.gather(*(worker(c) for c in self.conns[:concurrency]))
        return errors, fewest


def parse_kind(text: str) -> dict:
    """``16:8`` or ``1:20:stream``: a kind of burst."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "stream"):
        raise argparse.ArgumentTypeError(f"--kind {text!r}: expected CONCURRENCY:PER[:stream]")
    return {"concurrency": int(parts[0]), "per": int(parts[1]), "stream": len(parts) == 3}


async def run(key: str, rounds: int, bursts: int, kinds: list[dict], specs: list[str]) -> dict:
    parsed = [(a.split("=", 1)[0], *a.split("=", 1)[1].rsplit("@", 1)) for a in specs]
    targets = {name: Target(url, key) for name, url, _ in parsed}
    pids = {name: int(pid) for name, _, pid in parsed}
    for t in targets.values():
        await t.connect(max(k["concurrency"] for k in kinds))
        for k in kinds:
            await t.burst(k["concurrency"], k["per"], k["stream"], [])     # warm, unmeasured
    await asyncio.sleep(1.5)        # the warm answers priced (the price table loaded) and written, unmeasured
    names = list(targets)
    out = [dict(k, rounds={n: [] for n in names}) for k in kinds]
    for _ in range(rounds):
        for kind, got in zip(kinds, out, strict=True):
            before = {n: thread_cpu(pids[n]) for n in names}
            lat: dict[str, list[float]] = {n: [] for n in names}
            errors = dict.fromkeys(names, 0)
            fewest = dict.fromkeys(names, kind["concurrency"])
            for b in range(bursts):
                for n in names[b % len(names):] + names[:b % len(names)]:
                    e, f = await targets[n].burst(kind["concurrency"], kind["per"], kind["stream"], lat[n])
                    errors[n] += e
                    fewest[n] = min(fewest[n], f)
            after = {n: thread_cpu(pids[n]) for n in names}
            for n in names:
                used = {tid: cpu - before[n].get(tid, 0.0) for tid, cpu in after[n].items()}
                got["rounds"][n].append({
                    "latencies": lat[n], "sent": kind["concurrency"] * kind["per"] * bursts,
                    "errors": errors[n], "in_flight": fewest[n],
                    "loop_cpu": used.get(pids[n], 0.0),
                    "threads_cpu": sum(v for t, v in used.items() if t != pids[n]),
                    "threads": {str(t): v for t, v in sorted(used.items()) if t != pids[n]}})
    for t in targets.values():
        for _, writer in t.conns:
            writer.close()
    return {"kinds": out, "started": {n: {str(t): v for t, v in started(pids[n]).items()} for n in names}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--key", required=True, help="the bearer every request presents")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--bursts", type=int, required=True, help="bursts of each kind a round, each target's in turn")
    ap.add_argument("--kind", type=parse_kind, action="append", required=True, help="CONCURRENCY:PER[:stream]")
    ap.add_argument("targets", nargs="+", metavar="NAME=URL@PID")
    args = ap.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.key, args.rounds, args.bursts, args.kind, args.targets))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
