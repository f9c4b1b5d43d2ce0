"""Helpers of the browser tests: `hermes-admin web` started for real, Chromium driven by playwright.

- :func:`start_web`: the installed ``hermes-admin web`` in a subprocess on a free loopback
  port, its stdout and stderr kept in files (the log the canary checks read); the first
  link is read from its stdout (bounded wait).
- :class:`InProcess`: a :class:`tui.web.server.WebConsole` on its own event loop in a thread,
  for the tests that read its counters or run the control with the Origin check off.
- :func:`chromium`: Debian's chromium (never a browser download), headless.
- :class:`PageScreen`: every WebSocket frame the page sends and receives, kept, and the
  bytes it received fed to a terminal emulator (pyte): what the page drew, as text.

Every wait is bounded and polls; nothing sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pyte

from store.paths import Home
from tests.conftest import HERMES_ADMIN, cli_env
from tests.monitor.helpers import free_port, wait_until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LINK = re.compile(r"(https?://\S+\?token=[A-Za-z0-9_-]+)")


def available() -> bool:
    if not os.path.exists(CHROMIUM):
        return False
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return True


class WebProcess:
    """A running `hermes-admin web`: its links, its log files, and a clean stop."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Path, err: Path, port: int) -> None:
        self.proc, self.out, self.err, self.port = proc, out, err, port

    def log(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")

    def links(self) -> list[str]:
        return LINK.findall(self.out.read_text(errors="replace"))

    def first_link(self, timeout: float = 20.0) -> str:
        return wait_until(lambda: (self.links() or [None])[0], timeout, "the link on stdout: " + self.log()[-400:])

    def children(self) -> list[int]:
        """Console processes started by this server (its descendants running tui.web.child)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                env_ok = b"tui.web.child" in cmd
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if env_ok and _descends(int(stat.rsplit(")", 1)[1].split()[1]), self.proc.pid):
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def _descends(ppid: int, ancestor: int) -> bool:
    for _ in range(6):
        if ppid == ancestor:
            return True
        if ppid <= 1:
            return False
        try:
            ppid = int(Path(f"/proc/{ppid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


@contextmanager
def start_web(home: Home, tmp: Path, *args: str) -> Iterator[WebProcess]:
    port = free_port()
    out, err = tmp / "web.out", tmp / "web.err"
    env = cli_env(home)
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen([str(HERMES_ADMIN), "web", "--home", str(home.root), "--port", str(port), *args],
                                stdin=subprocess.DEVNULL, stdout=o, stderr=e, env=env, cwd=str(tmp))
    web = WebProcess(proc, out, err, port)
    try:
        yield web
    finally:
        web.stop()


class InProcess:
    """A WebConsole served from a thread with its own loop (stopped on exit)."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="web-console", daemon=True)
        self._stop: asyncio.Event | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            from tui.web.server import serve_forever

            self._stop = asyncio.Event()
            self.ready.set()
            await serve_forever(self.console, self._stop)

        self.loop.run_until_complete(main())

    def __enter__(self) -> InProcess:
        self.thread.start()
        assert self.ready.wait(10), "the web console's loop did not start"
        wait_until(lambda: self.console.printed, 10, "the first link")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(20)


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            yield browser
        finally:
            browser.close()


class PageScreen:
    """What a page's console socket carried, both ways, and what it drew (pyte)."""

    def __init__(self) -> None:
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)
        self.sent: list[str] = []
        self.received: list[bytes | str] = []
        self.urls: list[str] = []
        self.closed = False

    def attach(self, page: Any) -> PageScreen:
        def on_socket(ws: Any) -> None:
            self.urls.append(ws.url)
            ws.on("framesent", self._sent)
            ws.on("framereceived", self._received)
            ws.on("close", lambda _ws: setattr(self, "closed", True))

        page.on("websocket", on_socket)
        return self

    def _sent(self, payload: Any) -> None:
        text = payload if isinstance(payload, str) else bytes(payload).decode("utf-8", "replace")
        self.sent.append(text)
        try:
            envelope = json.loads(text)
        except ValueError:
            return
        if isinstance(envelope, list) and envelope and envelope[0] == "resize":
            self.screen.resize(envelope[1]["height"], envelope[1]["width"])

    def _received(self, payload: Any) -> None:
        self.received.append(payload)
        if isinstance(payload, (bytes, bytearray)):
            self.stream.feed(bytes(payload))

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wire(self) -> str:
        """Every frame both ways, as text (for the canary check)."""
        got = [p if isinstance(p, str) else bytes(p).decode("utf-8", "replace") for p in self.received]
        return "\n".join(self.sent + got)

    def wait_for(self, page: Any, text: str, timeout: float = 20.0) -> str:
        """Wait (bounded, polling through the page's event loop) until the screen shows *text*."""
        self.until(page, lambda: text in self.text(), timeout, f"the page to show {text!r}")
        return self.text()

    def until(self, page: Any, pred: Callable[[], Any], timeout: float, what: str) -> None:
        """Wait (bounded) until *pred* holds, polling through the page's event loop: playwright's
        sync API delivers the socket's frames only while one of its calls runs, so a plain
        sleep between looks would never see the screen change."""
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; "
                                     f"the page shows:\n{self.text()}")
            page.wait_for_timeout(50)     # lets playwright deliver frames; a bounded poll step

    def line_with(self, text: str) -> str:
        return next((ln for ln in self.screen.display if text in ln), "")
