"""The fake provider's accept queue takes 64 connections at once: a bench or a proxy that opens
them together must not stall in SYN retries (the stdlib server's default queue holds 5)."""

from __future__ import annotations

import select
import socket
import time
from http.server import ThreadingHTTPServer

import pytest

from tui.demo import fake_provider
from tui.demo.fake_provider import FakeProvider

pytestmark = pytest.mark.timeout(30)


def _connected_at_once(port: int, n: int = 64) -> int:
    """How many of *n* connects complete with nobody accepting (the listen queue alone)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
        done: set[socket.socket] = set()
        deadline = time.monotonic() + 2.0
        while len(done) < n and time.monotonic() < deadline:
            _r, w, _x = select.select([], [s for s in socks if s not in done], [], 0.2)
            done.update(s for s in w if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
        return len(done)
    finally:
        for s in socks:
            s.close()


def test_sixty_four_connects_complete_with_nobody_accepting_yet() -> None:
    p = FakeProvider()                    # listening, not yet serving: the queue alone answers
    try:
        assert _connected_at_once(p.port) == 64
    finally:
        p._server.server_close()


def test_control_the_stdlib_default_queue_completes_only_a_few(monkeypatch) -> None:
    monkeypatch.setattr(fake_provider, "_Listener", ThreadingHTTPServer)
    p = FakeProvider()
    try:
        assert _connected_at_once(p.port) < 16
    finally:
        p._server.server_close()
