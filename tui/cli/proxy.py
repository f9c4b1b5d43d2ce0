"""``hermes-admin proxy``: serve the home's pools to any OpenAI-compatible app.

``hermes-admin proxy [--host 127.0.0.1] [--port 8645] [--pool POOL] [--client-keys FILE]``
runs the server (store.proxy) until SIGTERM/SIGINT, then drains and exits 0.
``hermes-admin proxy status [--json]`` reads the status file a running proxy keeps under
the home and says what it is doing; exit 1 when no proxy is running there.

Exit status: 2 bad input (no primary pool, unknown pool), 3 a non-loopback bind without
a usable client-keys file, or an unreadable store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable

from store.agent import refresh
from store.agent.runtime import RESTORE_INTERVAL
from store.authfile import read_store
from store.config.read import read_config
from store.errors import EXIT_FAILURE, EXIT_OK, BadInput
from store.model import pools
from store.paths import resolve_home
from store.proxy import CLIENT_KEYS_FILE, DEFAULT_PORT, DRAIN_TIMEOUT
from store.proxy.inbound import gate_for
from store.proxy.stats import is_live, read_statuses

AddCommon = Callable[[argparse.ArgumentParser], None]


def register(sub: argparse._SubParsersAction, add_common: AddCommon) -> None:
    p = sub.add_parser("proxy", help="serve the pools to OpenAI-compatible apps (or: proxy status)")
    p.add_argument("action", nargs="?", choices=("status",), metavar="status",
                   help="show what the proxy running on this home is doing")
    p.add_argument("--host", default="127.0.0.1",
                   help="bind address (default 127.0.0.1; anything else needs --client-keys)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any)")
    p.add_argument("--pool", metavar="POOL", help="serve this pool first (default: model.provider)")
    p.add_argument("--client-keys", type=Path, metavar="FILE",
                   help=f"client keys, one per line, mode 0600 (default <home>/{CLIENT_KEYS_FILE})")
    p.add_argument("--drain-timeout", type=float, default=DRAIN_TIMEOUT, metavar="S",
                   help=f"on SIGTERM, wait this long for in-flight requests (default {DRAIN_TIMEOUT:g})")
    p.add_argument("--restore-interval", type=float, default=RESTORE_INTERVAL, metavar="S",
                   help=f"seconds between checks for going back to the primary (default {RESTORE_INTERVAL:g})")
    p.add_argument("--json", action="store_true", help="with status: machine-readable")
    add_common(p)
    p.set_defaults(func=cmd_proxy)


def cmd_proxy(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    home = resolve_home(getattr(args, "home", None))
    if not 0 <= args.port <= 65535:
        raise BadInput(f"--port {args.port}: must be 0-65535")
    cfg = read_config(home)     # unreadable: exit 3 naming the file (the chain comes from it)
    primary = args.pool or (cfg.primary.provider if cfg is not None and cfg.primary else None)
    if not primary:
        raise BadInput(f"{home.config}: model.provider is not set; pass --pool POOL")
    doc = read_store(home).doc or {}
    if primary not in pools(doc):
        raise BadInput(f"--pool {primary}: no such pool in {home.auth} "
                       f"(pools: {', '.join(sorted(pools(doc))) or 'none'})")
    # Imported here: aiohttp costs about 1 s of start-up (measured with -X importtime)
    # that every other verb would otherwise pay.
    from store.proxy.chain import Chain
    from store.proxy.server import ProxyServer, serve

    gate = gate_for(args.host, args.client_keys or home.root / CLIENT_KEYS_FILE)
    chain = Chain(home, primary, refresh_hook=refresh.RefreshHook(), restore_interval=args.restore_interval,
                  lock_timeout=args.lock_timeout)
    server = ProxyServer(home, chain, gate, host=args.host, port=args.port, drain_timeout=args.drain_timeout)
    logging.basicConfig(level=logging.INFO, format="hermes-admin proxy: %(message)s", stream=sys.stderr)

    def ready(s: ProxyServer) -> None:
        chain_text = " -> ".join(r.name for r in chain.routes)
        auth = "client keys required" if not gate.open else "any bearer (loopback)"
        print(f"hermes-admin proxy on http://{s.host}:{s.port}/v1 serving {chain_text}; {auth}", flush=True)

    asyncio.run(serve(server, on_ready=ready))
    return EXIT_OK


def _hhmm(ts: Any) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts)) if isinstance(ts, (int, float)) else "—"


def _status(args: argparse.Namespace) -> int:
    home = resolve_home(getattr(args, "home", None))
    now = time.time()
    statuses = read_statuses(home)
    live = [st for st in statuses if is_live(st, now)]
    if args.json:
        json.dump({"running": bool(live), "proxies": live, "last": statuses[0] if statuses else None},
                  sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK if live else EXIT_FAILURE
    if not statuses:
        print(f"no proxy has run on {home.root}")
        return EXIT_FAILURE
    if not live:
        st = statuses[0]
        print(f"no proxy running on {home.root} (last status {st.get('state', '—')} at {_hhmm(st.get('updated_at'))})")
        return EXIT_FAILURE
    for st in live:
        _print_status(st)
    return EXIT_OK


def _print_status(st: dict[str, Any]) -> None:
    print(f"proxy {st.get('url')} pid {st.get('pid')}, {st.get('state')} since {_hhmm(st.get('started_at'))}; "
          f"in flight {st.get('in_flight', 0)}, requests {st.get('requests_total', 0)}, "
          f"client keys {'required' if st.get('inbound_auth') else 'not required (loopback)'}")
    if st.get("active") == st.get("primary"):
        print(f"chain: on primary {st.get('primary')}")
    else:
        print(f"chain: on fallback {st.get('active')} since {_hhmm(st.get('on_fallback_since'))}, "
              f"next restore check {_hhmm(st.get('next_restore_check'))}")
    for r in st.get("chain") or []:
        mark = "▶" if r.get("active") else " "
        print(f"  {mark} {r.get('name')}  model {r.get('model') or '(client)'}  usable {r.get('usable')}/"
              f"{r.get('rows')}  cooling {r.get('cooling')}  dead {r.get('dead')}")
    print("credentials:")
    for c in st.get("credentials") or []:
        print(f"  {c.get('pool')}/{c.get('id')}  {c.get('label') or '—'}  in flight {c.get('in_flight')}  "
              f"{c.get('requests_per_minute')}/min")
    for name, p in (st.get("pools") or {}).items():
        print(f"pool {name}: last 10 min {sum(p.get('requests') or [])} requests, "
              f"{sum(p.get('rate_limited') or [])} answered 429")
