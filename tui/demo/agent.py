"""A simulated Hermes agent: a separate process that uses ``store.agent.runtime`` on a home.

Each turn it asks the restore gate, selects a credential, sends one chat request to the
(fake) provider, and reports the result, so rotations, cooldowns, fallbacks and restores
happen live in the store the dashboard watches. Used by ``hermes-admin demo`` and by the
multi-process tests::

    python -m tui.demo.agent --home DIR --pool openrouter --interval 0.7 \
        [--duration S] [--report FILE] [--restore-interval S] [--subagents N]

With ``--proxy URL`` (how ``hermes-admin demo`` runs them) the agent is an ordinary
OpenAI-compatible client instead: each turn is one chat completion sent to the
hermes-admin proxy at URL, which picks the credential, rotates and falls back.

It ends on SIGTERM/SIGINT, after --duration, or when its parent process goes away; with
--report it writes ``{"selections": n, "turns": n, "over_cap_leases": n, ...}`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from store.agent import probe
from store.agent.outcomes import CONNECT, RETRY, Result, Selection
from store.agent.refresh import RefreshHook
from store.agent.runtime import AgentRuntime
from store.authfile import read_store
from store.errors import HermesAdminError
from store.model import pool_rows
from store.paths import Home
from store.pools import policy

CHAT_TIMEOUT = 5.0
# Set by the demo to its own pid; children exit when their parent is no longer it.
PARENT_ENV = "HERMES_ADMIN_DEMO_PARENT"


def chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")


def chat(sel: Selection, base_url: str | None = None, timeout: float = CHAT_TIMEOUT,
         stream: bool = False) -> Result:
    """Send one chat completion with *sel*'s key (*stream*: streamed, asking for its usage in
    a last chunk); the answer as a runtime :class:`Result`."""
    return chat_answer(sel, base_url, timeout, stream)[0]


def chat_answer(sel: Selection, base_url: str | None = None, timeout: float = CHAT_TIMEOUT,
                stream: bool = False) -> tuple[Result, bytes | None]:
    """:func:`chat`, with a success's body (for the usage it reports; None on an error)."""
    url = chat_url(base_url or sel.base_url or "")
    ask: dict = {"model": sel.model or "demo-model", "messages": [{"role": "user", "content": "ping"}]}
    if stream:
        ask.update(stream=True, stream_options={"include_usage": True})
    body = json.dumps(ask).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {sel.token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
            return Result(resp.status, dict(resp.headers)), resp.read(1 << 20)
    except urllib.error.HTTPError as exc:
        raw = exc.read() or b""
        reason = message = None
        try:
            err = json.loads(raw).get("error") or {}
            reason = err.get("code") or err.get("type")
            message = err.get("message")
        except (ValueError, AttributeError):
            pass
        return Result(exc.code, dict(exc.headers or {}), reason, message), None
    except OSError as exc:
        return Result.failed_transport(CONNECT, f"{type(exc).__name__}"), None   # the route's fault, no bench


def one_turn(agent: AgentRuntime, base_url: str | None = None) -> list[Result]:
    """Restore gate, select, send, report (a retry is sent at once). The results seen."""
    agent.maybe_restore_primary()
    sel = agent.select()
    results: list[Result] = []
    for _ in range(4):      # bounded: a retry, a refresh, a rotation, a fallback
        if sel is None:
            break
        result, body = chat_answer(sel, base_url)
        results.append(result)
        decision = agent.report(result, body=body)     # its usage goes to the usage ledger
        if decision.action in ("ok", "failed", "out"):
            break
        sel = decision.selection if decision.action != RETRY else decision.selection or sel
    return results


PROXY_BEARER = "demo-client"     # loopback proxy: any bearer is accepted


def proxy_turn(proxy_url: str, model: str, timeout: float = CHAT_TIMEOUT, stream: bool = False) -> Result:
    """One chat completion through the proxy at *proxy_url* (its ``/v1`` base)."""
    sel = Selection(pool="proxy", row_id="", token=PROXY_BEARER, label="", base_url=proxy_url,
                    model=model)
    return chat(sel, proxy_url, timeout, stream)


class _Subagents:
    """Threads that lease rows like subagents; counts leases granted over the cap while a
    row below the cap was available (which must never happen)."""

    def __init__(self, agent: AgentRuntime, n: int, stop: threading.Event) -> None:
        self.agent, self.n, self.stop = agent, n, stop
        self.leases = 0
        self.over_cap = 0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _run(self) -> None:
        client = self.agent.client(self.agent.primary)
        cap = client.lease_cap
        while not self.stop.is_set():
            sel = None
            # One lease decision at a time (Hermes decides under its pool lock too), so the
            # before/after views below are consistent.
            with self._lock:
                try:
                    usable_before = self._usable(client)
                    before = client.leases()
                    sel = client.lease()
                    usable_after = self._usable(client)
                except HermesAdminError:
                    sel = None
                if sel is not None:
                    self.leases += 1
                    held = client.leases().get(sel.row_id, 0)
                    below = [rid for rid in usable_before & usable_after
                             if before.get(rid, 0) < cap]
                    if held > cap and below:
                        self.over_cap += 1
            if sel is not None:
                self.stop.wait(0.05)
                with self._lock:
                    client.release(sel.row_id)
            self.stop.wait(0.05)

    @staticmethod
    def _usable(client: Any) -> set[str]:
        rows = pool_rows(read_store(client.home).doc or {}, client.pool)
        return {str(r.get("id")) for r in policy.available(rows, client.clock(), client.ttls)
                if probe.row_secret(r, client.env)}


def _parent_alive(ppid: int) -> bool:
    return os.getppid() == ppid


def expected_parent() -> int:
    """The pid that started us: the demo says so in the environment, because reading
    getppid() at startup is too late if the demo died while we were importing."""
    value = os.environ.get(PARENT_ENV, "")
    return int(value) if value.isdigit() else os.getppid()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tui.demo.agent")
    p.add_argument("--home", required=True, type=Path)
    p.add_argument("--pool", required=True)
    p.add_argument("--model", default="demo-model")
    p.add_argument("--interval", type=float, default=0.7)
    p.add_argument("--duration", type=float, default=None)
    p.add_argument("--report", type=Path)
    p.add_argument("--restore-interval", type=float, default=300.0)
    p.add_argument("--token-url", default=None, help="OAuth token endpoint for every pool")
    p.add_argument("--subagents", type=int, default=0)
    p.add_argument("--lock-timeout", type=float, default=30.0)
    p.add_argument("--proxy", metavar="URL", help="send every request through this proxy (/v1 base)")
    args = p.parse_args(argv)
    if args.proxy:
        return _proxy_main(args)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ppid = expected_parent()
    home = Home(args.home.absolute())
    hook = RefreshHook({k: args.token_url for k in ("openai-codex", "anthropic")}
                       if args.token_url else None)
    agent = AgentRuntime(home, args.pool, model=args.model, refresh_hook=hook,
                         restore_interval=args.restore_interval, lock_timeout=args.lock_timeout)
    subs = _Subagents(agent, args.subagents, stop)
    subs.start()
    deadline = time.monotonic() + args.duration if args.duration else None
    turns = errors = 0
    statuses: dict[str, int] = {}
    while not stop.is_set():
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not _parent_alive(ppid):
            break
        try:
            for r in one_turn(agent):
                statuses[str(r.status)] = statuses.get(str(r.status), 0) + 1
        except HermesAdminError as exc:   # store busy or unreadable: try again next turn
            errors += 1
            print(f"demo agent: {exc}", file=sys.stderr, flush=True)
        turns += 1
        stop.wait(args.interval)
    stop.set()
    for t in subs.threads:
        t.join(timeout=2)
    agent.close()                   # the usage still queued for the ledger (bounded)
    if args.report:
        report = {"selections": agent.selections, "turns": turns, "errors": errors,
                  "statuses": statuses, "leases": subs.leases, "over_cap_leases": subs.over_cap,
                  "per_pool": {k: c.selections for k, c in agent._clients.items()},
                  "usage_answers": agent.usage.answers,
                  "notices": [n.kind for n in agent.notices]}
        tmp = args.report.with_suffix(".tmp")
        tmp.write_text(json.dumps(report))
        tmp.replace(args.report)
    return 0


def _proxy_main(args: argparse.Namespace) -> int:
    """The --proxy agent: a plain client; the proxy does selection and outcomes."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ppid = expected_parent()
    deadline = time.monotonic() + args.duration if args.duration else None
    statuses: dict[str, int] = {}
    turns = 0
    while not stop.is_set() and _parent_alive(ppid):
        if deadline is not None and time.monotonic() >= deadline:
            break
        # every other turn streamed, asking for its usage (the spend column counts both)
        status = str(proxy_turn(args.proxy, args.model, stream=turns % 2 == 1).status)
        statuses[status] = statuses.get(status, 0) + 1
        turns += 1
        stop.wait(args.interval)
    if args.report:
        tmp = args.report.with_suffix(".tmp")
        tmp.write_text(json.dumps({"turns": turns, "statuses": statuses}))
        tmp.replace(args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
