"""hermes-admin's proxy with one of its promises taken out (for bench/bench_proxy_cpu.py --ablate).

    .venv/bin/python bench/proxy_ablated.py PART[,PART...] proxy --home HOME --port 0 ...

Each *PART* is replaced by a no-op (or the aiohttp default) before the CLI starts, so what it
costs per request is the proxy's CPU with it less the proxy's CPU without it, measured in the
same rounds. A measurement, never a way to run: without its parts the proxy breaks promises
(no log line, no redaction, no usage record...). The parts:

- ``log``: the request's trace, its log line and histograms (``observing/requests.py``);
- ``stats``: the in-flight and per-minute counts, the 429 counters (``observing/stats.py``);
- ``usage``: the usage feed and the budgets' tally (``observing/spend.py``);
- ``redaction``: the answer's headers and the row's token in its body, the stream's hold-back;
- ``verdict``: a success's verdict and what takes it (breaker, pin, counters, headroom bench);
- ``takers``: what takes a success's verdict, the verdict itself still worked out as the floor
  does (``bench/proxy_floor.py``: the readings, and the usage of a body read whole);
- ``door``: the inbound key and the model name's bound;
- ``headroom``: the in-flight tickets and the answer's rate-limit readings;
- ``marks``: the route's ``X-Hermes-*`` headers on an answer;
- ``timeouts``: the upstream's 600 s read bound (each body noted while read, checked once a
  second: ``store/proxy/edge/upstream.py``), replaced by aiohttp's default (one timer per request);
- ``background``: the once-a-second work (the status file, the count flush, control files),
  spent per second and not per request: left out where a count per request must not carry it
  (``bench/bench_proxy_instr.py``, whose requests run some 20 times slower under valgrind);
- ``batching``: not a part taken out: the usage feed's hand-over made :data:`SLOWER` times
  longer and the ledger's batches half that, so that about as many answers share one as when
  the proxy runs at full speed (for the count under valgrind, whose requests run that much slower).

``none`` takes nothing out. Run with ``PYTHONPATH`` set (``bench/bench_proxy.py``'s
``start_ours`` with a tree), it patches that tree's proxy rather than this one's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if not os.environ.get("PYTHONPATH"):        # another tree's proxy when one is named
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


SLOWER = 20        # about how much slower a request runs under valgrind's callgrind here


def _none(*_a: Any, **_k: Any) -> None:
    return None


def ablate(part: str) -> None:
    """Take *part* out of the proxy (module attributes patched before it starts)."""
    if part == "none":
        return
    if part == "background":        # the parts another tree's proxy is measured without or with
        from store.proxy import server as _server

        _server.FLUSH_INTERVAL = 24 * 3600.0
        return
    if part == "batching":
        from store.proxy.observing import spend as _spend
        from store.usage import ledger as _ledger

        _spend.BATCH *= SLOWER
        _ledger.FLUSH_EVERY *= SLOWER / 2     # 5 s: a few hundred rows a batch (a count waits for it)
        return
    import aiohttp

    from store.proxy import forward, server
    from store.proxy.edge import answers, door, relay, sse, wire
    from store.proxy.observing import requests, spend, stats
    from store.proxy.routing import headroom_gate

    if part == "log":
        requests.RequestLog.begin = _none             # no trace: every hook finds none
        requests.RequestLog.finish = _none
    elif part == "stats":
        for name in ("begin", "end", "judged"):
            setattr(stats.Stats, name, _none)
    elif part == "usage":
        spend.Spend.answer = _none
    elif part == "redaction":
        relay.redacted_headers = _none
        wire.OwnToken.hide = lambda self, data: data
        sse.StreamRedaction.feed = lambda self, data: data
        sse.StreamRedaction.flush = lambda self: b""
    elif part == "verdict":
        forward.Forwarder._served = _none
    elif part == "takers":
        from store.agent.judge import judge_success

        def judged_only(self: Any, attempt: Any, base: str, body: bytes | None = None) -> None:
            judge_success(self.chain.clock(), attempt.readings, body=body,
                          dialect=attempt.dialect if body else None, model=attempt.selection.model)

        forward.Forwarder._served = judged_only
    elif part == "door":
        door.bad_model = _none
        door.Door.allowed = lambda self, request, protocol: True
    elif part == "headroom":
        headroom_gate.HeadroomGate.sent = _none
        headroom_gate.HeadroomGate.done = _none
        headroom_gate.HeadroomGate.observe = _none
        headroom_gate.HeadroomGate.read = lambda self, headers, now: ()
    elif part == "marks":
        answers.Answers.mark = _none
    elif part == "timeouts":
        server.UPSTREAM_TIMEOUT = aiohttp.ClientTimeout()
    else:
        raise SystemExit(f"proxy_ablated.py: no part {part!r}")


if __name__ == "__main__":
    for p in sys.argv[1].split(","):
        ablate(p)
    from tui.cli import main

    sys.exit(main(sys.argv[2:]))
