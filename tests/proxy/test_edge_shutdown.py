"""Bounded shutdown (RELIABILITY 42): SIGTERM stops accepting, drains up to --drain-timeout,
cancels the rest, flushes counts and exits, with an open stream and clients sending one
byte a second still there; the status file keeps being written while it drains; a slow
client is cut at the body read timeout. Bounds are asserted generously (never a timing
figure); the control puts aiohttp's own shutdown (a minute per handler) back."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest
from aiohttp import web

from store.proxy import server as server_mod
from store.proxy.observing.stats import status_path
from store.proxy.server import ProxyServer
from tests.conftest import read_doc
from tests.proxy.upstream import ScriptedUpstream, stream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy, start_proxy_proc, wait_until

pytestmark = pytest.mark.slow
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
MARGIN = 20.0        # generous: a loaded 2-core machine, never a timing figure


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def _endless(up: ScriptedUpstream) -> None:
    """Key 0 streams for minutes, a chunk every 0.2 s."""
    up.script(EDGE_KEYS[0], stream([b'data: {"choices": [{"delta": {"content": "tok"}}]}\n\n'] * 1000, every=0.2))


class SlowClient:
    """Sends a request whose body arrives one byte a second; reads whatever comes back."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
        self.sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 1000\r\n\r\n")
        self.answer = b""
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(1.0)
        try:
            for _ in range(600):
                try:
                    self.sock.sendall(b" ")
                except OSError:
                    break
                try:
                    got = self.sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not got:
                    break
                self.answer += got
        finally:
            self.done.set()
            self.sock.close()


def _open_stream(url: str, got: list[bytes]) -> threading.Thread:
    def run() -> None:
        try:
            with httpx.stream("POST", url + "/chat/completions", json=BODY, timeout=120) as r:
                for chunk in r.iter_raw():
                    got.append(chunk)
        except httpx.HTTPError:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_sigterm_with_an_open_stream_and_slow_clients_exits_within_the_bound(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    _endless(up)
    proc, url = start_proxy_proc(tmp_home, "--drain-timeout", "1")
    try:
        got: list[bytes] = []
        t = _open_stream(url, got)
        wait_until(lambda: got, 20, "the stream to start")
        slow = [SlowClient(url) for _ in range(3)]
        time.sleep(0.2)       # let the slow clients' headers arrive (their bodies never will)
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(1 + MARGIN)
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert rc == 0 and took < 1 + MARGIN
    t.join(10)
    body = b"".join(got)
    assert b"shutting_down" in body                  # the stream was told, in-band, not cut silently
    for c in slow:
        c.done.wait(10)
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["request_count"] == 1   # counts flushed
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert json.loads(status_path(tmp_home, port).read_text())["state"] == "stopped"
    stderr = proc.stderr.read()
    assert "cancelling" in stderr and "Traceback" not in stderr


def test_the_status_file_stays_fresh_while_draining(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    _endless(up)
    proc, url = start_proxy_proc(tmp_home, "--drain-timeout", "120")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    path = status_path(tmp_home, port)
    try:
        got: list[bytes] = []
        stop_reading = threading.Event()

        def client() -> None:
            with httpx.stream("POST", url + "/chat/completions", json=BODY, timeout=120) as r:
                for chunk in r.iter_raw():
                    got.append(chunk)
                    if stop_reading.is_set():
                        return            # the client goes away: the drain can end

        t = threading.Thread(target=client, daemon=True)
        t.start()
        wait_until(lambda: got, 20, "the stream to start")
        proc.send_signal(signal.SIGTERM)

        def status() -> dict:
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):
                return {}

        wait_until(lambda: status().get("state") == "draining", 20, "the draining status")
        first = status()["updated_at"]
        wait_until(lambda: status().get("state") == "draining" and status()["updated_at"] > first, 20,
                   "a fresh status while draining")
        assert status()["in_flight"] == 1
        stop_reading.set()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert status()["state"] == "stopped"
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["request_count"] == 1


def test_a_client_one_byte_a_second_is_cut_at_the_body_timeout(tmp_home, up) -> None:
    edge_seed(tmp_home, up.url, fallback=False)
    with running_chain_proxy(tmp_home, body_timeout=1.0) as p:
        c = SlowClient(p.url)
        assert c.done.wait(1 + MARGIN), "the slow client was never answered"
    head, _, body = c.answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    err = json.loads(body)["error"]
    assert err["type"] == "request_timeout" and err["request_id"]
    assert up.seen == []


def test_control_without_cancelling_aiohttp_waits_for_the_stream(tmp_home, up, monkeypatch) -> None:
    async def keep(self) -> None:
        return None

    real = web.ServerRunner
    monkeypatch.setattr(ProxyServer, "_cancel_left", keep)
    monkeypatch.setattr(server_mod.web, "ServerRunner", lambda app, **kw: real(app, handle_signals=False))
    edge_seed(tmp_home, up.url, fallback=False)
    _endless(up)
    with running_chain_proxy(tmp_home, drain_timeout=0.5) as p:
        got: list[bytes] = []
        _open_stream(p.url, got)
        wait_until(lambda: got, 20, "the stream to start")
        stopping = asyncio.run_coroutine_threadsafe(p.server.stop(), p.loop)
        with pytest.raises(TimeoutError):
            stopping.result(0.5 + 5)          # without the cancel, aiohttp waits up to a minute
        up.reset_script()
        up.__exit__(None, None, None)        # the upstream goes: the stream ends, stop() can finish
        stopping.result(60)
        p.server.stop = _already_stopped      # the helper's own stop() has nothing left to do


async def _already_stopped() -> None:
    return None
