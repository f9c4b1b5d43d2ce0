"""hermes-admin's CLI under cProfile, profiled only while asked (for bench/bench_proxy_cpu.py).

    .venv/bin/python bench/proxy_profiled.py STATS_FILE proxy --home HOME --port 0 ...

SIGUSR1 starts the profiler, SIGUSR2 stops it and writes its statistics (CPU time of the
loop's thread, not wall time) to STATS_FILE
(``pstats`` format): the profile holds the measured requests, not the start-up. The event
loop's thread only: the store writes and status files run on worker threads, off the
request path.
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tui.cli import main  # noqa: E402 - after the tree is on the path


def run(out: str, argv: list[str]) -> int:
    prof = cProfile.Profile(time.thread_time)     # CPU time of the loop's thread: a wait costs nothing

    def start(*_: object) -> None:
        prof.enable()

    def stop(*_: object) -> None:
        prof.disable()
        prof.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2:]))
