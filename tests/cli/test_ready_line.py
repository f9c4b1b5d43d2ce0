"""A server verb whose ready line cannot be printed says so and stops what it started.

Found by a hostile session: ``hermes-admin web > /dev/full`` exited 1 with "internal error:
OSError: [Errno 28] No space left on device", the runner never cleaned up; ``proxy`` and
``monitor`` did the same, leaving status files that said "running". Now each says on stderr
that it could not print its line on stdout, with the OS error, stops (status "stopped", the
port closed) and exits 1, through one helper (tui.text.ready).
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import subprocess
import sys

import pytest

from store.errors import EXIT_FAILURE
from store.monitor import status as monitor_status
from store.paths import Home
from store.proxy.observing.stats import read_statuses
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tests.monitor.helpers import free_port
from tui.text.ready import CannotAnnounce, say_ready
from tui.web.server import WebConsole, WebOptions

FULL = "/dev/full"


class FullStream(io.StringIO):
    """A stdout on a full disk: writes are taken, the flush fails (as a TextIOWrapper's does)."""

    def flush(self) -> None:
        raise OSError(28, "No space left on device")


def _run_to_full(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]
    with open(FULL, "w") as full:
        return subprocess.run([*cmd, "--home", str(home.root), *args], stdout=full, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, env=cli_env(home), timeout=60)


def _said_why(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == EXIT_FAILURE, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    last = proc.stderr.splitlines()[-1]          # after the proxy's own "stopping" log line
    assert last.startswith(f"hermes-admin: error: could not print {what} on stdout"), proc.stderr
    assert "[Errno 28] No space left on device" in last, proc.stderr


def test_say_ready_names_stdout_and_the_os_error() -> None:
    with pytest.raises(CannotAnnounce, match=r"could not print the link on stdout \(\[Errno 28\] No space"):
        say_ready("hello", "the link", FullStream())
    closed = io.StringIO()
    closed.close()
    with pytest.raises(CannotAnnounce, match="closed file"):
        say_ready("hello", "the link", closed)
    ok = io.StringIO()
    say_ready("hello", "the link", ok)
    assert ok.getvalue() == "hello\n"


@pytest.mark.skipif(not __import__("os").path.exists(FULL), reason="no /dev/full here")
def test_web_to_a_full_stdout_says_so_and_exits_1(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({}))
    _said_why(_run_to_full(tmp_home, "web", "--port", str(free_port())), "the console's link")


@pytest.mark.skipif(not __import__("os").path.exists(FULL), reason="no /dev/full here")
def test_proxy_to_a_full_stdout_says_so_stops_and_exits_1(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", token="sk-or-v1-0123456789abcdefREADYx1")]}))
    proc = _run_to_full(tmp_home, "proxy", "--port", "0", "--pool", "openrouter", "--drain-timeout", "0")
    _said_why(proc, "the proxy's address")
    states = [s.get("state") for s in read_statuses(tmp_home)]
    assert states == ["stopped"], states          # stopped as on SIGTERM: drained, counts flushed


@pytest.mark.skipif(not __import__("os").path.exists(FULL), reason="no /dev/full here")
def test_monitor_to_a_full_stdout_says_so_stops_and_exits_1(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({}))
    proc = _run_to_full(tmp_home, "monitor", "--metrics", "none")
    _said_why(proc, "the monitor's ready line")
    st = monitor_status.read(tmp_home)
    assert st is not None and st.get("state") == "stopped", json.dumps(st)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start_to_full(tmp_path) -> tuple[BaseException | None, bool]:
    """Start a console whose stdout is full: what start() raised, and whether the port
    still listens afterwards, in the same loop (a process exit would hide a leftover)."""
    port = free_port()
    console = WebConsole(WebOptions(port=port, home=str(tmp_path)))
    console.out = FullStream()

    async def main() -> tuple[BaseException | None, bool]:
        try:
            runner = await console.start()
        except Exception as exc:   # noqa: BLE001 - the test reads what it was
            return exc, _listening(port)
        await runner.cleanup()
        return None, False

    return asyncio.run(main())


def test_web_stops_serving_when_its_link_cannot_be_printed(tmp_path) -> None:
    raised, listening = _start_to_full(tmp_path)
    assert isinstance(raised, CannotAnnounce) and "the console's link" in str(raised)
    assert not listening


def test_control_without_the_cleanup_the_port_would_still_listen(tmp_path, monkeypatch) -> None:
    async def no_cleanup(self) -> None:   # the protection removed: the runner is left as it is
        return None

    monkeypatch.setattr("aiohttp.web.AppRunner.cleanup", no_cleanup)
    raised, listening = _start_to_full(tmp_path)
    assert isinstance(raised, CannotAnnounce)
    assert listening                           # the test above would have seen it
