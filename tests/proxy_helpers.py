"""A hermes-admin proxy in this process (its own event loop in a thread) on a temp home,
in front of the loopback fake provider; shared by the proxy tests."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from store.paths import Home
from store.proxy.chain import Chain
from store.proxy.inbound import Gate
from store.proxy.server import ProxyServer
from tests.conftest import make_row, make_store, write_store
from tui.demo.fake_provider import FakeProvider

OR_KEYS = [f"sk-or-v1-proxytest-{i:030d}" for i in range(3)]
NOUS_KEY = "sk-nous-proxytest-000000000000000000001"

CONFIG = """\
model:
  provider: openrouter
  default: anthropic/claude-sonnet-4
fallback_providers:
  - provider: nous
    model: fallback-model
"""


def seed(home: Home, fake: FakeProvider, *, or_keys: int = 3) -> None:
    """openrouter (primary, fill_first) with *or_keys* rows, then nous as the fallback."""
    write_store(home, make_store({
        "openrouter": [make_row(f"or{i}aaa", token=OR_KEYS[i], priority=i, base_url=fake.url + "/api/v1")
                       for i in range(or_keys)],
        "nous": [make_row("ns0aaa", token=NOUS_KEY, base_url=fake.url + "/v1")],
    }))
    home.config.write_text(CONFIG)


class Running:
    """A started proxy: ``url`` (the /v1 base), ``server``, ``chain``, ``call(coro)``."""

    def __init__(self, server: ProxyServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.chain = server.chain
        self.loop = loop

    @property
    def url(self) -> str:
        return f"http://{self.server.host}:{self.server.port}/v1"

    def call(self, coro: Any, timeout: float = 20) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


@contextmanager
def running_proxy(home: Home, *, host: str = "127.0.0.1", gate: Gate | None = None,
                  restore_interval: float = 300.0, watch: bool = True, refresh_hook: Any = None,
                  **kw: Any) -> Iterator[Running]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-proxy", daemon=True)
    thread.start()
    # The chain reads the home's .env itself, as the proxy command's does (None, not {}).
    chain = Chain(home, "openrouter", restore_interval=restore_interval, env=None, refresh_hook=refresh_hook)
    server = ProxyServer(home, chain, gate or Gate(None), host=host, port=0, watch=watch, **kw)
    running = Running(server, loop)
    try:
        running.call(server.start())
        yield running
    finally:
        try:
            running.call(server.stop(), timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            loop.close()


def wait_until(pred: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Bounded polling; fails the test with *what* when the bound passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def restore_finished(p: Running) -> bool:
    """The restore gate was started and has finished (its probes, if any, were answered)."""
    task = p.server._restore_task
    return task is not None and task.done()
