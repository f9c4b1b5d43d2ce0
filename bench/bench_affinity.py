"""Benchmark: conversation affinity (#30), one run, one scripted upstream, one workload.

    .venv/bin/python bench/bench_affinity.py [--convs 24] [--turns 20] [--keys 4]
        [--limit 12] [--window 1] [--think 0.05] [--no-litellm]

The upstream is :mod:`tests.affinity.cache_upstream`: a prompt cache per key (a turn is a
hit when the conversation's previous turn was served by the same key within the TTL) and a
per-key rate limit (``--limit`` requests per ``--window`` seconds, 429 with ``retry-after``).
The workload: ``--convs`` conversations of ``--turns`` turns each, all at once, each turn
waiting for the previous answer plus ``--think`` seconds (the client's own pace); each
conversation has its own system prompt and opening (no client marker: the proxy names it by
the digest of its opening). Chat Completions through the real ``openai`` SDK (no retries of
its own), on a ``round_robin`` pool of ``--keys`` keys.

Runs, each on a fresh cache and rate window:

- **on**: hermes-admin's proxy, affinity on (the default);
- **off**: the same with ``proxy.affinity.enabled: false``;
- **ceiling**: one key alone and no rate limit (every turn after the first can hit);
- **litellm**: LiteLLM's ``Router`` with ``optional_pre_call_checks: [session_affinity]``
  (its default ``simple-shuffle``, ``num_retries=2``), the conversation's id as its
  ``metadata.session_id``, the same keys and workload; run with the Python of
  ``.cache/litellm-venv`` (``bench/bench_proxy.py`` installs it there) where it exists.

Printed per run: the cache hit ratio, the share of prompt tokens read from the cache, the
request spread over the keys (max / min of the 200s each key served), the upstream's 429s
and the errors the client saw by status. Goals: on within 5 points of the ceiling; spread
at most 1.3; 0 client-visible 429s and 503s (pacing, #30's other half, is what hides a
biting rate limit: without it a 429 benches the key and moves its conversations); LiteLLM:
a higher hit ratio than it at an equal or better spread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LITELLM_PY = ROOT / ".cache" / "litellm-venv" / "bin" / "python"
FILLER = " ".join(f"Rule {i}: keep answers short and exact." for i in range(60))


def system_prompt(i: int) -> str:
    return f"You are agent {i} of the hermes-admin affinity bench. {FILLER}"


async def workload(send, convs: int, turns: int, think: float) -> Counter:
    """Every conversation at once, its turns in order; *send(i, messages)* returns the
    answer's text or raises with a ``status_code``. The client's errors by status."""
    errors: Counter = Counter()

    async def one(i: int) -> None:
        msgs = [{"role": "system", "content": system_prompt(i)}]
        for t in range(turns):
            msgs.append({"role": "user", "content": f"conversation {i}, step {t}: go on"})
            try:
                text = await send(i, msgs)
            except Exception as exc:      # what the client sees
                errors[str(getattr(exc, "status_code", type(exc).__name__))] += 1
                text = "(failed)"
            msgs.append({"role": "assistant", "content": text})
            await asyncio.sleep(think)

    await asyncio.gather(*(one(i) for i in range(convs)))
    return errors


# -- LiteLLM, in its own venv (only the standard library above this line is needed there) --

def litellm_driver(url: str, keys: list[str], convs: int, turns: int, think: float) -> dict:
    import litellm
    from litellm import Router

    litellm.suppress_debug_info = True
    router = Router(model_list=[{"model_name": "m", "litellm_params": {"model": "openai/m", "api_base": url + "/api/v1",
                                                                       "api_key": k}} for k in keys],
                    optional_pre_call_checks=["session_affinity"], num_retries=2)

    async def send(i: int, msgs: list) -> str:
        got = await router.acompletion(model="m", messages=list(msgs), metadata={"session_id": f"conv-{i}"})
        return got.choices[0].message.content

    t0 = time.monotonic()
    errors = asyncio.run(workload(send, convs, turns, think))
    return {"errors": dict(errors), "seconds": time.monotonic() - t0}


# -- hermes-admin --

def proxy_run(up, keys: list[str], args, *, settings: str | None, label: str) -> dict:
    import openai

    from store.paths import Home
    from tests.affinity.conversations import row_id
    from tests.conftest import make_row, make_store, write_store
    from tests.proxy_helpers import running_chain_proxy

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "home"
        root.mkdir(mode=0o700)
        home = Home(root)
        write_store(home, make_store({"openrouter": [
            make_row(row_id(i), token=k, priority=i, base_url=up.url + "/api/v1") for i, k in enumerate(keys)]}))
        home.config.write_text("model:\n  provider: openrouter\n  default: m\n"
                               "credential_pool_strategies:\n  openrouter: round_robin\n")
        if settings:
            (root / "hermes-admin.yaml").write_text(settings)
        with running_chain_proxy(home, primary="openrouter") as p:
            client = openai.AsyncOpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=60)

            async def send(i: int, msgs: list) -> str:
                got = await client.chat.completions.create(model="m", messages=list(msgs))
                return got.choices[0].message.content

            async def go() -> Counter:
                try:
                    return await workload(send, args.convs, args.turns, args.think)
                finally:
                    await client.close()

            t0 = time.monotonic()
            errors = asyncio.run(go())
            return {"label": label, "errors": dict(errors), "seconds": time.monotonic() - t0}


def figures(up, keys: list[str], run: dict) -> dict:
    served = up.served_by_key()
    counts = [served.get(k, 0) for k in keys]
    return {**run, "hit": up.hit_ratio(), "cached": up.cached_share(), "per_key": counts,
            "spread": (max(counts) / min(counts)) if min(counts) else float("inf"),
            "upstream_429": up.rate_limited(), "answered": sum(counts)}


def show(f: dict) -> None:
    err = ", ".join(f"{k}: {v}" for k, v in sorted(f["errors"].items())) or "none"
    print(f"{f['label']:<10} hit {f['hit']:6.1%}  cached tokens {f['cached']:6.1%}  per key {f['per_key']}  "
          f"spread {f['spread']:.2f}  upstream 429s {f['upstream_429']}  client errors: {err}  "
          f"({f['answered'] / f['seconds']:.0f} answers/s)" if f.get("seconds") else
          f"spread {f['spread']:.2f}  upstream 429s {f['upstream_429']}  client errors: {err}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--convs", type=int, default=24)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--limit", type=int, default=12, help="requests per key per window")
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--think", type=float, default=0.05)
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--litellm-driver", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.litellm_driver:      # in LiteLLM's venv: the workload through its Router, figures as JSON
        spec = json.loads(args.litellm_driver)
        print(json.dumps(litellm_driver(spec["url"], spec["keys"], args.convs, args.turns, args.think)))
        return 0

    sys.path.insert(0, str(ROOT))
    from tests.affinity.cache_upstream import CacheUpstream

    keys = [f"sk-or-v1-affinitybench-{i:030d}" for i in range(args.keys)]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"{args.convs} conversations x {args.turns} turns, {args.keys} keys round_robin, "
          f"limit {args.limit}/key/{args.window:g}s, think {args.think:g}s", flush=True)
    out = []
    with CacheUpstream(ttl=300, limit=args.limit, window=args.window) as up:
        for label, settings in (("on", None), ("off", "proxy:\n  affinity:\n    enabled: false\n")):
            up.reset()
            out.append(figures(up, keys, proxy_run(up, keys, args, settings=settings, label=label)))
            show(out[-1])
        up.reset()
        up.limit = None
        out.append(figures(up, keys[:1], proxy_run(up, keys[:1], args, settings=None, label="ceiling")))
        show(out[-1])
        up.limit = args.limit
        if not args.no_litellm and LITELLM_PY.exists():
            up.reset()
            spec = json.dumps({"url": up.url, "keys": keys})
            got = subprocess.run([str(LITELLM_PY), __file__, "--litellm-driver", spec, "--convs", str(args.convs),
                                  "--turns", str(args.turns), "--think", str(args.think)],
                                 capture_output=True, text=True, timeout=1800,
                                 env=dict(os.environ, LITELLM_LOG="ERROR"))
            last = (got.stdout.strip().splitlines() or [""])[-1]
            try:
                run = {"label": "litellm", **json.loads(last)}
            except ValueError:
                print("LiteLLM run failed:", (got.stderr or got.stdout)[-1500:])
            else:
                out.append(figures(up, keys, run))
                show(out[-1])
        elif not args.no_litellm:
            print(f"LiteLLM not installed at {LITELLM_PY.parent.parent} (bench/bench_proxy.py installs it); skipped")
    on, ceiling = out[0], out[2]
    gap = (ceiling["hit"] - on["hit"]) * 100
    print(f"goal: on within 5 points of the ceiling: {gap:.1f} points -> {'met' if gap <= 5 else 'NOT met'}")
    print(f"goal: spread <= 1.3: {on['spread']:.2f} -> {'met' if on['spread'] <= 1.3 else 'NOT met'}")
    bad = sum(v for k, v in on["errors"].items() if k in ("429", "503"))
    print(f"goal: 0 client-visible 429/503 with affinity on: {bad} -> {'met' if bad == 0 else 'NOT met'}")
    ll = next((f for f in out if f["label"] == "litellm"), None)
    if ll is not None:
        better = on["hit"] > ll["hit"] and on["spread"] <= ll["spread"]
        print(f"goal: hit above LiteLLM's ({on['hit']:.1%} vs {ll['hit']:.1%}) at an equal or better spread "
              f"({on['spread']:.2f} vs {ll['spread']:.2f}) -> {'met' if better else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
