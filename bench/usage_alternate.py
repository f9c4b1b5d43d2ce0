"""The load generator of bench/bench_usage.py: several targets in one process, in short
alternating bursts, with each target's CPU time read from /proc around every round.

    .venv/bin/python bench/usage_alternate.py KEY CONCURRENCY ROUNDS BURSTS PER NAME=URL@PID...

For each of ROUNDS rounds, BURSTS bursts; a burst sends PER requests on each of
CONCURRENCY kept-alive connections to each target in turn (the order turns by one every
burst, so each target is first, second and last as often). Neighbouring bursts of two targets
are milliseconds apart: the machine's load, which changes over seconds, is nearly the same
for both. Around each round the CPU time of each target's process is read from
``/proc/<pid>/task/*/schedstat``: its main thread (the event loop) apart from its other threads
(for hermes-admin's proxy: the usage feed's and, with the ledger on, the ledger's writer, each
reported apart).
Work a thread does after a round's last burst lands in the next round; over the run nothing
is lost.

Prints one JSON object: ``rounds``, per target, per round, the latencies (seconds), the errors
and the CPU seconds of the loop and of each other thread; ``started``, per target, when each
thread started (to name them in order: the feed's starts before the ledger's writer).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

BODY = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}).encode()


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


class Target:
    """One target: its kept-alive connections and its request's bytes."""

    def __init__(self, url: str, key: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.request = (f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(BODY)}\r\n\r\n").encode() + BODY
        self.conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def one(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> bool:
        reader, writer = conn
        writer.write(self.request)
        head = await reader.readuntil(b"\r\n\r\n")
        lower = head.lower()
        if b"transfer-encoding: chunked" in lower:
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                await reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            at = lower.index(b"content-length:") + 15
            await reader.readexactly(int(lower[at:lower.index(b"\r\n", at)]))
        return head[9:12] == b"200"

    async def connect(self, n: int) -> None:
        for _ in range(n):           # one by one: the stdlib fake upstream listens with a backlog of 5
            conn = await asyncio.open_connection(self.host, self.port)
            await self.one(conn)
            self.conns.append(conn)

    async def burst(self, per: int, lat: list[float]) -> int:
        errors = 0

        async def worker(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
            nonlocal errors
            for _ in range(per):
                t0 = time.perf_counter()
                ok = await self.one(conn)
                lat.append(time.perf_counter() - t0)
                errors += not ok

        await asyncio.gather(*(worker(c) for c in self.conns))
        return errors


async def main(argv: list[str]) -> dict:
    key, concurrency, rounds, bursts, per = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    specs = [(a.split("=", 1)[0], *a.split("=", 1)[1].rsplit("@", 1)) for a in argv[5:]]
    targets = {name: Target(url, key) for name, url, _ in specs}
    pids = {name: int(pid) for name, _, pid in specs}
    for t in targets.values():
        await t.connect(concurrency)
        await t.burst(per, [])                                    # warm, unmeasured
    await asyncio.sleep(1.5)        # the warm answers priced (the price table loaded) and written, unmeasured
    names = list(targets)
    out: dict[str, list[dict]] = {n: [] for n in names}
    for _ in range(rounds):
        before = {n: thread_cpu(pids[n]) for n in names}
        lat: dict[str, list[float]] = {n: [] for n in names}
        errors = dict.fromkeys(names, 0)
        for b in range(bursts):
            for n in names[b % len(names):] + names[:b % len(names)]:
                errors[n] += await targets[n].burst(per, lat[n])
        after = {n: thread_cpu(pids[n]) for n in names}
        for n in names:
            used = {tid: cpu - before[n].get(tid, 0.0) for tid, cpu in after[n].items()}
            out[n].append({"latencies": lat[n], "errors": errors[n], "loop_cpu": used.get(pids[n], 0.0),
                           "threads_cpu": sum(v for t, v in used.items() if t != pids[n]),
                           "threads": {str(t): v for t, v in sorted(used.items()) if t != pids[n]}})
    for t in targets.values():
        for _, writer in t.conns:
            writer.close()
    return {"rounds": out, "started": {n: {str(t): v for t, v in started(pids[n]).items()} for n in names}}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))))
