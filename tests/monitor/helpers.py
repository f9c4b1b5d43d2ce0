"""What the monitor tests share: a monitor on a loop of its own, a webhook receiver, an SMTP
server, canary homes, and bounded waits. Every wait here is bounded; none is a timed assert."""

from __future__ import annotations

import asyncio
import email
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from email import policy
from pathlib import Path
from typing import Any

from aiohttp import web
from aiosmtpd.controller import Controller

from store.monitor import rules as R
from store.monitor.daemon import Monitor
from store.monitor.delivery import target
from store.paths import Home
from store.pools import policy as pool_policy
from store.proxy.edge.inbound import Gate
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store

BOUND = 20.0
POOL = "openrouter"
# Canary keys: one per field that can hold text, all key-shaped and all distinct.
CANARY = "sk-or-v1-canary0000000000000000000000000000000000000000000"


def canary(n: int) -> str:
    return f"sk-or-v1-canary{n:04d}" + "c" * 40


def wait_until(pred: Callable[[], Any], timeout: float = BOUND, what: str = "condition") -> Any:
    """Bounded polling: the predicate's truthy value, or AssertionError naming *what*."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.01)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_home(home: Home, keys: int = 2, *, canaries: bool = False) -> None:
    """A home with one pool of *keys* keys; with *canaries*, a canary key in every text field
    of every row, in config.yaml and in .env."""
    rows = []
    for i in range(keys):
        extra: dict[str, Any] = {}
        if canaries:
            extra = {"label": f"lbl-{canary(100 + i)}", "last_error_message": f"echo {canary(200 + i)}",
                     "last_error_reason": f"r-{canary(300 + i)}", "base_url": f"https://x/{canary(400 + i)}",
                     "refresh_token": canary(500 + i), "note": canary(600 + i)}
        rows.append(make_row(f"k{i:05d}", priority=i, token=canary(i) if canaries else f"sk-or-v1-{i:048d}",
                             **extra))
    if canaries:
        rows[0]["id"] = f"id-{canary(700)}"
    write_store(home, make_store({POOL: rows}, note=canary(800)))
    if canaries:
        (home.root / "config.yaml").write_text(f"model:\n  provider: {POOL}\n  api_key: {canary(900)}\n")
        (home.root / ".env").write_text(f"OPENROUTER_API_KEY={canary(901)}\n")


def canaries_in(text: str) -> list[str]:
    """Every canary key (or a piece of one long enough to name it) found in *text*: a
    fingerprint of a canary is ``sk-or-…cccc`` and holds no ``canary`` at all."""
    return sorted(set(re.findall(r"canary\d{4}", text)))


def exhaust_all(home: Home, code: int = 429, seconds: float = 3600.0) -> None:
    """Bench every row of the pool, through the real transaction, as an agent would."""
    now = time.time()
    with transaction(home) as doc:
        rows = doc["credential_pool"][POOL]
        for row in rows:
            pool_policy.mark_exhausted(rows, row, now, code=code, reason="rate_limit_exceeded",
                                       reset_at=now + seconds)


def reset_all(home: Home) -> None:
    now = time.time()
    with transaction(home) as doc:
        for row in doc["credential_pool"][POOL]:
            pool_policy.reset(row, now)


def rules(quiet: float = 0.3, retries: int = 1, **only: Any) -> R.Rules:
    """The default rules with a short quiet period (and any rule switched by name)."""
    base = R.defaults()
    table = dict(base.rules)
    for name, on in only.items():
        table[name] = R.Rule(name, enabled=bool(on), severity=table[name].severity,
                             threshold=table[name].threshold, kinds=table[name].kinds)
    return R.Rules(table, quiet, retries, "test rules")


class Running:
    """A :class:`Monitor` on an event loop of its own thread; ``call`` runs code on that loop."""

    def __init__(self, **kw: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-monitor-loop", daemon=True)
        self.thread.start()
        kw.setdefault("gate", Gate(None))
        self.monitor = self.call(lambda: Monitor(**kw))
        self.run(self.monitor.start())

    def run(self, coro: Any, timeout: float = BOUND) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], Any]) -> Any:
        async def go() -> Any:
            return fn()
        return self.run(go())

    def idle(self) -> bool:
        return bool(self.call(self.monitor.idle))

    def stop(self) -> None:
        try:
            self.run(self.monitor.stop(5.0), timeout=BOUND)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(BOUND)
            self.loop.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Webhook:
    """A local aiohttp receiver of Apprise's ``json://`` posts (loopback only)."""

    def __init__(self, status: int = 200) -> None:
        self.posts: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.status = status
        self._lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-webhook", daemon=True)
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(BOUND)
        self.url = f"json://127.0.0.1:{self.port}/hook"

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/hook", self._hook)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return int(self.runner.addresses[0][1])

    async def _hook(self, request: web.Request) -> web.Response:
        raw = await request.text()
        with self._lock:
            self.raw.append(raw + json.dumps(dict(request.headers)))
            try:
                self.posts.append(json.loads(raw))
            except ValueError:
                self.posts.append({"unparsed": raw})
        return web.Response(status=self.status, text="ok")

    def got(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.posts)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(BOUND)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(BOUND)


class Smtp:
    """A local SMTP server (aiosmtpd) that keeps every message, decoded."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []
        self.raw: list[str] = []
        outer = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                outer.raw.append(envelope.content.decode("utf-8", "replace"))
                outer.messages.append(email.message_from_bytes(envelope.content, policy=policy.default))
                return "250 OK"

        self.controller = Controller(Handler(), hostname="127.0.0.1", port=free_port())
        self.controller.start()
        self.url = (f"mailto://127.0.0.1:{self.controller.port}?from=monitor@example.com"
                    f"&to=ops@example.com")

    def texts(self) -> list[str]:
        """Subject and every decoded text part of each message."""
        out = []
        for m in list(self.messages):
            parts = [str(m["Subject"])]
            for part in m.walk():
                if part.get_content_maintype() == "text":
                    parts.append(part.get_content())
            out.append("\n".join(parts))
        return out

    def close(self) -> None:
        self.controller.stop()


def targets(*urls: str) -> list[Any]:
    return [target(u, i) for i, u in enumerate(urls, start=1)]


def audit_lines(home: Home) -> list[dict[str, Any]]:
    path = Path(home.audit)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


__all__ = ["BOUND", "CANARY", "POOL", "Running", "Smtp", "Webhook", "audit_lines", "canaries_in", "canary",
           "exhaust_all", "free_port", "reset_all", "rules", "seed_home", "targets", "wait_until"]
