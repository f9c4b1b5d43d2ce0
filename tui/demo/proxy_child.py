"""The demo's proxy: the hermes-admin proxy on the demo home, gone when the demo is gone.

    python -m tui.demo.proxy_child --home DIR --token-url URL [--port 0] [--restore-interval S]

What ``hermes-admin proxy`` runs (``store.proxy``), with one demo difference: OAuth
refreshes go to the fake provider's token endpoint (*--token-url*), never to a real
provider. A watchdog thread sends this process SIGTERM (the proxy's own graceful drain)
when the demo that started it disappears, even by SIGKILL, as the demo's agents do.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

from store.agent.refresh import RefreshHook
from store.config.read import read_config
from store.paths import Home
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from store.proxy.server import ProxyServer, serve
from tui.demo.agent import expected_parent

PARENT_POLL = 0.5


def _watch_parent(ppid: int) -> None:
    while os.getppid() == ppid:
        threading.Event().wait(PARENT_POLL)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tui.demo.proxy_child")
    p.add_argument("--home", required=True, type=Path)
    p.add_argument("--token-url", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--restore-interval", type=float, default=10.0)
    args = p.parse_args(argv)
    ppid = expected_parent()
    threading.Thread(target=_watch_parent, args=(ppid,), daemon=True, name="demo-parent").start()
    home = Home(args.home.absolute())
    cfg = read_config(home)
    primary = cfg.primary.provider if cfg is not None and cfg.primary else None
    if not primary:
        print(f"demo proxy: {home.config} has no model.provider", file=sys.stderr)
        return 2
    hook = RefreshHook({k: args.token_url for k in ("openai-codex", "anthropic")})
    chain = Chain(home, primary, refresh_hook=hook, restore_interval=args.restore_interval)
    server = ProxyServer(home, chain, Gate(), port=args.port)   # loopback: any bearer
    asyncio.run(serve(server, on_ready=lambda s: print(f"demo proxy on {s.host}:{s.port}", flush=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
