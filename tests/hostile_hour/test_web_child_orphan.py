"""Hostile hour: a killed ``hermes-admin web`` leaves no browser session's console behind.

A closed terminal ends the console and its children (the session watch). But the console a
browser session runs is fed through a pipe, not a terminal, and the hang-up watch only
watched terminals: after a SIGKILL of the web server (an OOM kill, ``systemctl kill``), each
session's console lived on as an orphan, its watcher and its lock-taking writes included,
until its idle timeout. The web child now watches its stdin pipe too: the server's end
closing ends the session as a hung-up terminal does.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import pytest

from store.paths import Home
from tests.conftest import HERMES_ADMIN, make_row, write_store
from tests.fleet_helpers import free_port
from tests.hermes_real import wait_for

BOUND = 20.0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _consoles(pid: int) -> list[int]:
    """The server's children that are a session's console (not one between fork and exec)."""
    out = []
    for c in _children(pid):
        try:
            if b"tui.web.child" in Path(f"/proc/{c}/cmdline").read_bytes():
                out.append(c)
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def _open_session(link: str, opened: threading.Event, done: threading.Event, reading: bool) -> None:
    base = link.split("/?")[0]
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
        async with s.get(link, allow_redirects=False):
            pass
        async with s.ws_connect(base + "/ws", headers={"Origin": base}) as ws:
            await ws.send_json(["resize", {"width": 80, "height": 24}])
            while (await ws.receive(timeout=BOUND)).type != aiohttp.WSMsgType.BINARY:
                pass                        # the console has drawn: it is up and running
            opened.set()
            while not reading and not done.is_set():
                await asyncio.sleep(0.1)    # a stalled tab: nothing read any more
            while not done.is_set():
                try:
                    msg = await ws.receive(timeout=0.2)
                except TimeoutError:
                    continue
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    return


@pytest.mark.timeout(90)
@pytest.mark.parametrize("reading", [True, False], ids=["browser-reading", "browser-stalled"])
def test_a_sigkilled_web_server_leaves_no_console_behind(tmp_home: Home, reading: bool) -> None:
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [make_row("aaaaaa")]}})
    server = subprocess.Popen([str(HERMES_ADMIN), "web", "--home", str(tmp_home.root), "--port", str(free_port())],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in server.stdout], daemon=True).start()  # type: ignore[union-attr]
    child = None
    done = threading.Event()
    try:
        link = None
        while link is None:
            line = lines.get(timeout=BOUND)
            if "token=" in line:
                link = line.split()[-1]
        opened = threading.Event()
        client = threading.Thread(target=lambda: asyncio.run(_open_session(link, opened, done, reading)), daemon=True)
        client.start()
        assert opened.wait(BOUND)
        assert wait_for(lambda: _consoles(server.pid), timeout=BOUND), "no console started for the session"
        child = _consoles(server.pid)[0]
        assert wait_for(lambda: _alive(child), timeout=BOUND)
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=BOUND)
        assert wait_for(lambda: not _alive(child), timeout=BOUND), "the session's console outlived the server"
        child = None
    finally:
        done.set()
        if server.poll() is None:
            server.kill()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


def _bare_child(home: Home, watch: bool, prefix: str = "") -> subprocess.Popen[bytes]:
    """A session's console as textual-serve starts it, its stdin a pipe we hold; *watch*
    False runs it with the server watch switched off (the code as it was); *prefix*: code
    run first (an inherited signal disposition)."""
    off = "" if watch else "child.hang_up_with_server = lambda: None; "
    code = f"import sys; {prefix}from tui.web import child; {off}sys.exit(child.main(sys.argv[1:]))"
    env = {**os.environ, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver", "COLUMNS": "80", "ROWS": "24"}
    return subprocess.Popen([sys.executable, "-c", code, "--home", str(home.root), "--remote", "test", "--read-only"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def _ends_when_the_server_end_closes(home: Home, watch: bool = True, prefix: str = "",
                                     within: float = BOUND) -> bool:
    """A bare console (:func:`_bare_child`) on *home*: whether it ends within *within*
    seconds of its stdin's other end closing (the server gone). Killed after either way."""
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [make_row("aaaaaa")]}})
    proc = _bare_child(home, watch=watch, prefix=prefix)
    try:
        proc.stdin.close()                                   # type: ignore[union-attr]
        return wait_for(lambda: proc.poll() is not None, timeout=within)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=BOUND)


def test_the_server_end_closing_ends_a_console_not_yet_drawn(tmp_home: Home) -> None:
    """No resize ever sent (a stalled client): the app has not mounted, and still ends."""
    assert _ends_when_the_server_end_closes(tmp_home)


def test_negative_control_without_the_watch_the_console_stays(tmp_home: Home) -> None:
    assert not _ends_when_the_server_end_closes(tmp_home, watch=False, within=5.0)   # an orphan: still there


NOHUP = "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN); "


@pytest.mark.timeout(90)
def test_a_console_that_inherits_sighup_ignored_still_ends_with_its_server(tmp_home: Home) -> None:
    """A server started under nohup: its consoles inherit SIGHUP ignored, and still end when
    the server's end closes (the console puts SIGHUP back to its default)."""
    assert _ends_when_the_server_end_closes(tmp_home, prefix=NOHUP)


@pytest.mark.timeout(90)
def test_negative_control_a_console_keeping_the_inherited_ignore_outlives_its_server(tmp_home: Home) -> None:
    """The check above can fail: with the ignore kept, the hang-up does nothing."""
    kept = NOHUP + "import tui.web.child as c; c.hear_hangups = lambda: None; "
    assert not _ends_when_the_server_end_closes(tmp_home, prefix=kept, within=5.0)
