"""hermes-admin's CLI with the cyclic GC's collections timed (for bench/bench_proxy_gc.py).

    .venv/bin/python bench/proxy_gc_timed.py OUT_FILE YOUNG proxy --home HOME --port 0 ...

Every collection's CPU time (``time.thread_time``, on the thread that runs it) and
generation is summed through ``gc.callbacks``; SIGUSR2 writes the sums to OUT_FILE as JSON.
YOUNG: the young generation's threshold the proxy sets once serving (``default``: the
proxy's own, :data:`store.proxy.loop.GC_YOUNG`; a number: that one, e.g. 700, Python's).
"""

from __future__ import annotations

import gc
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store.proxy import loop  # noqa: E402 - after the tree is on the path
from tui.cli import main  # noqa: E402


def run(out: str, young: str, argv: list[str]) -> int:
    if young != "default":
        loop.GC_YOUNG = int(young)
    sums = {"seconds": 0.0, "collections": [0, 0, 0]}
    started = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:
            sums["seconds"] += time.thread_time() - started[0]
            sums["collections"][info["generation"]] += 1

    gc.callbacks.append(timed)
    signal.signal(signal.SIGUSR2, lambda *_: Path(out).write_text(json.dumps(sums)))
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3:]))
