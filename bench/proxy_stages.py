"""The proxy's request path in stages, from a CPU-time profile (for bench/bench_proxy_cpu.py).

    .venv/bin/python bench/proxy_stages.py STATS_FILE [--cpu-ms MS]

*STATS_FILE*: a ``pstats`` file of hermes-admin's proxy under cProfile in CPU time
(``bench/bench_proxy_cpu.py --profile --keep-profile FILE``). Each stage of the path is a set
of functions: for each, its cumulative time (``cum``: with everything it calls) or its own
(``own``: the lines of its body only), less the cumulative time of the functions named as
nested in it (``minus``), which another stage counts. What no stage names is aiohttp's
server and client and the event loop: the work the bare passthrough does too.

cProfile adds a cost to every call, so its seconds are not the process's: the stages are
given as their share of the profile, and, with ``--cpu-ms`` (the proxy's real CPU ms per
request, measured without the profiler), as that share of the real figure, in microseconds.
A function of many small calls is overstated by the profiler: the microseconds are an
estimate, the order of the stages is what to act on.
"""

from __future__ import annotations

import argparse
import pstats
import sys
from typing import Any

# (stage, [(file suffix, function, "cum" | "own")], [(file suffix, function)] nested and counted elsewhere)
P = "store/proxy/"
STAGES: tuple[tuple[str, list[tuple[str, str, str]], list[tuple[str, str]]], ...] = (
    ("door: handler, inbound key, body checks, trace begin",
     [(P + "server.py", "handle", "own"), (P + "server.py", "_handle", "own"), (P + "edge/door.py", "allowed", "cum"),
      (P + "edge/door.py", "body", "cum"), (P + "observing/requests.py", "begin", "cum"),
      (P + "routing/chain.py", "restore_due", "cum"), (P + "forward.py", "forward", "own")],
     [("aiohttp/web_request.py", "read"), (P + "edge/door.py", "bad_model")]),
    ("body JSON for the model (door's bound, Want.model, conversation)",
     [(P + "edge/door.py", "bad_model", "cum"), (P + "routing/protocols.py", "model", "cum"),
      (P + "routing/protocols.py", "__init__", "cum"), (P + "routing/affinity.py", "__init__", "cum"),
      ("store/agent/judge.py", "endpoint_of", "cum")], []),
    ("selection and eligibility (select, usable, pins, picks)",
     [(P + "routing/chain.py", "select", "cum"), (P + "routing/chain.py", "usable", "cum"),
      (P + "routing/chain.py", "row_count", "cum"), (P + "routing/chain.py", "speaks", "cum")],
     [(P + "routing/protocols.py", "model")]),
    ("header build (kept headers both ways, dialect, auth, URL)",
     [(P + "forward.py", "_walk", "own"), (P + "edge/wire.py", "kept", "cum"),
      ("store/dialects/registry.py", "dialect_for", "cum"), ("store/dialects/dialect.py", "bearer", "cum"),
      ("store/dialects/dialect.py", "v1_in_base", "cum"), ("store/dialects/dialect.py", "__init__", "cum"),
      ("store/dialects/openai.py", "attach", "cum"), ("store/dialects/openai.py", "tail", "cum"),
      (P + "edge/wire.py", "raw_query", "cum"), (P + "edge/wire.py", "get", "cum"),
      (P + "routing/upstreams.py", "base_for", "cum")], []),
    ("upstream request (aiohttp's client: the passthrough's too)",
     [("aiohttp/client.py", "request", "cum"), ("aiohttp/client.py", "_request", "cum")], []),
    ("send bookkeeping (in-flight counts, trace, answer deadline)",
     [(P + "forward.py", "_send", "own"), (P + "observing/stats.py", "begin", "cum"),
      (P + "observing/stats.py", "end", "cum"), (P + "observing/requests.py", "upstream_begin", "cum"),
      (P + "observing/requests.py", "upstream_end", "cum"), (P + "routing/headroom_gate.py", "sent", "cum"),
      (P + "routing/headroom_gate.py", "done", "cum")], []),
    ("answer read (aiohttp: the passthrough's too)",
     [("aiohttp/client_reqrep.py", "read", "cum"), ("aiohttp/streams.py", "readany", "cum"),
      ("aiohttp/client_reqrep.py", "release", "cum")], []),
    ("verdict: readings, judge_success, usage of a body",
     [(P + "routing/headroom_gate.py", "read", "cum"), (P + "routing/headroom_gate.py", "observe", "cum"),
      ("store/agent/judge.py", "judge_success", "cum"), (P + "forward.py", "_judged", "cum")], []),
    ("redaction scan (answer headers, own token, stream hold-back)",
     [(P + "edge/wire.py", "redacted_headers", "cum"), (P + "edge/wire.py", "hide", "cum"),
      (P + "edge/sse.py", "feed", "cum"), (P + "edge/sse.py", "flush", "cum"), (P + "edge/sse.py", "__init__", "cum"),
      (P + "edge/sse.py", "note", "cum")], []),
    ("relay and write (response, marks, prepare, write)",
     [(P + "edge/relay.py", "relay", "cum")],
     [("aiohttp/client_reqrep.py", "read"), ("aiohttp/streams.py", "readany"), (P + "edge/wire.py", "kept"),
      (P + "edge/wire.py", "redacted_headers"), (P + "edge/wire.py", "hide"), (P + "edge/sse.py", "feed"),
      (P + "edge/sse.py", "flush"), (P + "edge/sse.py", "__init__"), (P + "edge/sse.py", "note"),
      (P + "edge/relay.py", "_judge"), (P + "observing/spend.py", "answer"),
      ("store/dialects/streams.py", "feed"), ("store/dialects/streams.py", "end"),
      ("store/dialects/streams.py", "__init__"), (P + "observing/requests.py", "upstream_end")]),
    ("deferred bookkeeping (log line, stats, pins, counts, usage feed, tally)",
     [(P + "edge/relay.py", "_judge", "cum"), (P + "observing/requests.py", "finish", "cum"),
      (P + "observing/requests.py", "_end_later", "cum"), (P + "observing/spend.py", "hand_over", "cum"),
      (P + "observing/spend.py", "answer", "cum"), ("store/dialects/streams.py", "feed", "cum"),
      ("store/dialects/streams.py", "end", "cum"), ("store/dialects/streams.py", "__init__", "cum")],
     [("store/agent/judge.py", "judge_success"), (P + "forward.py", "_judged"),
      ("store/dialects/registry.py", "dialect_for"), (P + "routing/chain.py", "speaks"),
      (P + "edge/relay.py", "_judge")]),     # a body's verdict runs inside _end_later: counted once
)
PASSTHROUGH = "aiohttp's server, the loop, the rest (what the passthrough does too)"


def _find(stats: dict[Any, Any], suffix: str, name: str) -> list[tuple[float, float]]:
    return [(v[2], v[3]) for (file, _line, func), v in stats.items() if func == name and file.endswith(suffix)]


def _callers_share(stats: dict[Any, Any], suffix: str, name: str, within: set[tuple[str, str]]) -> float:
    """The cumulative time of *name* called from a function of *within* (as pstats keeps it per caller)."""
    total = 0.0
    for (file, _line, func), v in stats.items():
        if func != name or not file.endswith(suffix):
            continue
        for (cfile, _cl, cfunc), cv in v[4].items():
            if any(cfunc == f and cfile.endswith(s) for s, f in within):
                total += cv[3]
    return total


def stage_seconds(st: pstats.Stats) -> tuple[list[tuple[str, float]], float, int]:
    """Each stage's profiled seconds, the profile's total, and the requests it holds."""
    stats = st.stats  # type: ignore[attr-defined]
    out = []
    for label, parts, minus in STAGES:
        own = {(s, f) for s, f, _ in parts}
        secs = sum(tt if how == "own" else ct for s, f, how in parts for tt, ct in _find(stats, s, f))
        secs -= sum(_callers_share(stats, s, f, own) for s, f in minus)
        out.append((label, max(0.0, secs)))
    requests = sum(int(v[1]) for (file, _l, func), v in stats.items()
                   if func == "finish" and file.endswith(P + "observing/requests.py"))
    return out, st.total_tt, max(1, requests)  # type: ignore[attr-defined]


def print_stages(st: pstats.Stats, cpu_ms: float | None = None, out: Any = sys.stdout) -> None:
    """The stage table: share of the profile, and µs per request of *cpu_ms* (the real figure)."""
    stages, total, n = stage_seconds(st)
    rest = total - sum(s for _, s in stages)
    print(f"\nthe request path in stages ({n} requests profiled; share of the loop's CPU"
          + (f"; us per request of {cpu_ms:.3f} ms measured without the profiler)" if cpu_ms else ")"), file=out)
    print(f"| stage | share | {'us per request |' if cpu_ms else ''}", file=out)
    print(f"|---|---:|{'---:|' if cpu_ms else ''}", file=out)
    for label, secs in [*stages, (PASSTHROUGH, rest)]:
        share = secs / total
        print(f"| {label} | {share:.1%} |" + (f" {share * cpu_ms * 1000:.0f} |" if cpu_ms else ""), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stats", help="a pstats file (bench_proxy_cpu.py --profile --keep-profile FILE)")
    ap.add_argument("--cpu-ms", type=float, help="the proxy's real CPU ms per request, to scale the shares")
    args = ap.parse_args(argv)
    print_stages(pstats.Stats(args.stats), args.cpu_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
