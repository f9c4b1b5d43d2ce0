"""A console whose event loop is stuck still ends when its session does (tui/app/session_end.py).

Seen in the tmux tests: Textual's shutdown blocked for good writing to a terminal that was
gone, and the console slept on, deaf to SIGTERM. These run a real process whose loop is
blocked the way that one was, and send it the signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The app's exit hook blocks the loop forever, like a write to a vanished terminal.
SCRIPT = textwrap.dedent("""
    import asyncio, sys, threading, time
    sys.path.insert(0, {root!r})
    from tui.app import session_end
    session_end.GRACE_S = {grace}
    marker = {marker!r}
    session_end.at_forced_exit(lambda: open(marker, "w").write("cleaned"))
    stuck = threading.Event()
    async def main():
        end = session_end.SessionEnd(lambda code: stuck.wait())
        end.install()
        print("ready", flush=True)
        while True:
            await asyncio.sleep(0.05)
    asyncio.run(main())
""")


def _run(tmp_path: Path, grace: float) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "cleaned"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT.format(root=str(ROOT), grace=grace,
                                                                  marker=str(marker))],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc, marker


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stuck_console_still_exits_after_the_grace_and_cleans_up(tmp_path, sig) -> None:
    proc, marker = _run(tmp_path, grace=0.5)
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=20)
    finally:
        proc.kill()
    assert code == 128 + sig
    assert marker.read_text() == "cleaned"


def test_negative_control_without_the_watchdog_the_stuck_loop_never_exits(tmp_path) -> None:
    """The same process with a grace longer than the test: SIGTERM alone does not end it."""
    proc, marker = _run(tmp_path, grace=3600)
    try:
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None and not marker.exists()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
