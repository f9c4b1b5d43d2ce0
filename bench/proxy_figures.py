"""The figures of ``bench/bench_proxy.py``: its table, the latency each proxy adds over a
direct call, and the goals as ratios in one run (hermes-admin's added latency at c1 and c16
and its streaming first byte within 1.1x the bare passthrough's on the same loop, at most
0.05x LiteLLM's, throughput at least 0.45x direct)."""

from __future__ import annotations


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def report(results: dict[str, dict]) -> None:
    cols = ["c1_p50", "c1_p99", "c16_p50", "c16_p99", "rps", "ttfb_p50", "ttfb_p99", "errors"]
    print(f"\n{'target':<22}" + "".join(f"{c:>10}" for c in cols) + "   (ms; rps = req/s at 64 concurrent)")
    for name, r in results.items():
        print(f"{name:<22}" + "".join(f"{r[c]:>10.2f}" if c != "errors" else f"{r[c]:>10d}" for c in cols))
    d = results["direct"]
    print("\nadded over direct (ms):")
    added = {}
    for name, r in results.items():
        if name == "direct":
            continue
        added[name] = {k: r[k] - d[k] for k in ("c1_p50", "c1_p99", "c16_p50", "c16_p99", "ttfb_p50")}
        print(f"  {name:<22}" + "  ".join(f"{k} {v:+.3f}" for k, v in added[name].items()))
    print("\nratios of added latency (p50), and throughput (the passthrough ratios of this sequential mode swing by"
          " 0.3-0.4x from run to run on a shared machine: --alternate measures them in alternating bursts):")
    for ours in [n for n in results if n.startswith("hermes-admin")]:
        a = added[ours]
        loop = "uvloop" if ours.endswith("/uvloop") else "asyncio"
        floor = f"bare-aiohttp/{loop}"
        for k in ("c1_p50", "c16_p50", "ttfb_p50"):
            parts = []
            if floor in added:
                ratio = _ratio(a[k], added[floor][k])
                parts.append(f"/ {floor} {ratio:.2f} (goal <= 1.1 {'met' if ratio <= 1.1 else 'NOT met'})")
            if "litellm" in added:
                ratio = _ratio(a[k], added["litellm"][k])
                parts.append(f"/ litellm {ratio:.3f} (goal <= 0.05 {'met' if ratio <= 0.05 else 'NOT met'})")
            if "nginx" in added:
                parts.append(f"/ nginx {_ratio(a[k], added['nginx'][k]):.1f}")
            print(f"  {ours:<22} {k}: " + "   ".join(parts))
        if floor in results:      # streaming: the first byte itself, beside the added part above
            ratio = _ratio(results[ours]["ttfb_p50"], results[floor]["ttfb_p50"])
            met = "met" if ratio <= 1.1 else "NOT met"
            print(f"  {ours:<22} first byte of a stream {results[ours]['ttfb_p50']:.3f} ms vs {floor} "
                  f"{results[floor]['ttfb_p50']:.3f} ms = {ratio:.2f} x (goal <= 1.1 {met})")
        tput = _ratio(results[ours]["rps"], d["rps"])
        print(f"  {ours:<22} throughput {results[ours]['rps']:.0f} req/s = {tput:.2f} x direct "
              f"(goal >= 0.45 {'met' if tput >= 0.45 else 'NOT met'})")
    if "hermes-admin" in results and "hermes-admin/uvloop" in results:
        u, a = added["hermes-admin/uvloop"], added["hermes-admin"]
        print("\nuvloop vs asyncio (hermes-admin's added latency, p50): " + "  ".join(
            f"{k} {u[k]:.3f} vs {a[k]:.3f} ms" for k in ("c1_p50", "c16_p50")) +
            f"; throughput {results['hermes-admin/uvloop']['rps']:.0f} vs {results['hermes-admin']['rps']:.0f} req/s")
    for name in ("litellm", "nginx"):
        if name not in added:
            print(f"  {name} not measured: no ratio to it")
