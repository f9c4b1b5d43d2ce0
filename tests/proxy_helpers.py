"""A hermes-admin proxy in this process (its own event loop in a thread) on a temp home,
in front of the loopback fake provider; shared by the proxy tests. :func:`up` is the scripted
upstream of one test as a fixture (a folder's conftest.py imports it), for the test files that put
the proxy in front of one."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from store.paths import Home
from store.proxy import server as server_module
from store.proxy.edge.inbound import Gate
from store.proxy.routing.chain import Chain
from store.proxy.server import ProxyServer
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream
from tui.demo.fake_provider import FakeProvider


@pytest.fixture
def up() -> Iterator[ScriptedUpstream]:
    """A scripted loopback upstream (tests.proxy.upstream) for one test, stopped after it."""
    with ScriptedUpstream() as u:
        yield u


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


# The in-process proxies of the tests do their once-a-second work (flush the counts, take
# control requests, write the status file, cut overdue streams) every TICK seconds: a test
# that waits for a flush waits a fifth as long. No test asserts the second itself; one that
# needs the product's interval passes ``tick=None`` to :func:`serving`.
TICK = 0.2


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

    def settled(self, timeout: float = 20) -> None:
        """Readiness (bounded) for a read of the proxy's memory from this thread: what the
        proxy does after an answer is written (a success's verdict: breaker, pin, counters;
        the request's log line) runs on its loop's next turn, and a coroutine sent now runs
        after it. The client may have the answer before that turn."""
        self.call(asyncio.sleep(0), timeout)
        wait_until(lambda: self.server.requests.pending == 0, timeout, "the proxy's bookkeeping")


@contextmanager
def running_proxy(home: Home, *, host: str = "127.0.0.1", gate: Gate | None = None,
                  restore_interval: float = 300.0, watch: bool = True, refresh_hook: Any = None,
                  tick: float | None = TICK, **kw: Any) -> Iterator[Running]:
    # The chain reads the home's .env itself, as the proxy command's does (None, not {}).
    chain = Chain(home, "openrouter", restore_interval=restore_interval, env=None, refresh_hook=refresh_hook)
    with serving(ProxyServer(home, chain, gate or Gate(None), host=host, port=0, watch=watch, **kw),
                 tick=tick) as running:
        yield running


@contextmanager
def serving(server: ProxyServer, *, tick: float | None = TICK) -> Iterator[Running]:
    """*server* started on an event loop of its own thread, stopped (bounded) at the end;
    its periodic work runs every *tick* seconds (None: the product's FLUSH_INTERVAL)."""
    with _ticking(tick):
        yield from _serving(server)


@contextmanager
def _ticking(tick: float | None) -> Iterator[None]:
    """store.proxy.server's FLUSH_INTERVAL set to *tick* while the context lasts (nests)."""
    saved = server_module.FLUSH_INTERVAL
    if tick is not None:
        server_module.FLUSH_INTERVAL = tick
    try:
        yield
    finally:
        server_module.FLUSH_INTERVAL = saved


def _serving(server: ProxyServer) -> Iterator[Running]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-proxy", daemon=True)
    thread.start()
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


# --- the network edges (tests/proxy/test_edge_*.py, tests/interop/) ---------------------------

EDGE_KEYS = [f"sk-or-v1-edgetest-{i:031d}" for i in range(3)]
EDGE_NOUS = "sk-nous-edgetest-00000000000000000000001"
STATUS = ("last_status", "last_status_at", "last_error_code", "last_error_reason",
          "last_error_message", "last_error_reset_at")


def edge_seed(home: Home, base: str, *, keys: int = 2, fallback: bool = True, **row_fields: Any) -> None:
    """openrouter with *keys* rows on ``<base>/api/v1``, then (with *fallback*) a nous route on
    ``<base>/nous/v1``: another upstream (base URL) for the breakers, the same test server."""
    pools: dict[str, list[dict[str, Any]]] = {
        "openrouter": [make_row(f"or{i}edg", token=EDGE_KEYS[i], priority=i, base_url=base + "/api/v1",
                                **row_fields) for i in range(keys)]}
    if fallback:
        pools["nous"] = [make_row("ns0edg", token=EDGE_NOUS, base_url=base + "/nous/v1")]
    write_store(home, make_store(pools))
    home.config.write_text(CONFIG if fallback else CONFIG.split("fallback_providers")[0])


@contextmanager
def running_chain_proxy(home: Home, *, lock_timeout: float = 30.0, watch: bool = False,
                        primary: str = "openrouter", gate: Gate | None = None, tick: float | None = TICK,
                        **kw: Any) -> Iterator[Running]:
    """:func:`running_proxy` with the chain's lock timeout chosen (a held lock in a test
    must not cost 30 s) and the watcher off unless asked for (*primary*: the pool served
    first)."""
    chain = Chain(home, primary, env=None, lock_timeout=lock_timeout)
    with serving(ProxyServer(home, chain, gate or Gate(None), port=0, watch=watch, **kw), tick=tick) as running:
        yield running


def status_fields(home: Home) -> dict[str, dict[str, Any]]:
    """Per openrouter/nous row id: its six status fields as the store holds them."""
    doc = strict_json(home.auth.read_bytes())
    return {str(r.get("id")): {f: r.get(f) for f in STATUS}
            for rows in doc["credential_pool"].values() for r in rows if isinstance(r, dict)}


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def strict_json(raw: bytes | str) -> Any:
    """Parse as strict JSON: NaN, Infinity and -Infinity are refused, as Hermes's reader
    and every other JSON reader may."""
    return json.loads(raw, parse_constant=_no_constant)


def start_proxy_proc(home: Home, *extra: str, timeout: float = 20.0) -> tuple[Any, str]:
    """The installed ``hermes-admin proxy`` on *home* (port 0) as a process: (Popen, /v1 URL).
    stdout and stderr are pipes; the ready line is read (bounded) and the rest left to the test."""
    import subprocess

    from tests.conftest import HERMES_ADMIN, cli_env

    proc = subprocess.Popen([str(HERMES_ADMIN), "proxy", "--home", str(home.root), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(home))
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    line = box[0] if box else ""
    if "http://" not in line:
        proc.kill()
        raise AssertionError(f"proxy did not start: {line!r} {proc.stderr.read()!r}")
    return proc, line.split()[3]
