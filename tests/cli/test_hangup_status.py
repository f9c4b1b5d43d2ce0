"""After its terminal hangs up, the CLI's exit status is the one it returned, never
Python's 120 for a failed last flush (tui.cli.boundary.settle_streams).

The child writes into its stdout buffer, waits until the terminal is gone (POLLHUP on the
pty), and returns 129 as the console does after a hang-up. No timing is involved: the
child knows the master is closed before it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = textwrap.dedent("""
    import select, sys
    settle = sys.argv[1] == "settle"
    sys.stderr.write("ready\\n"); sys.stderr.flush()
    poller = select.poll(); poller.register(0, 0)
    poller.poll(20_000)                   # returns on POLLHUP: the master is closed
    sys.stdout.write("x" * 100)           # left in the buffer: the exit flush must write it
    if settle:
        from tui.cli.boundary import settle_streams
        settle_streams()
    sys.exit(129)
""")


def _run(mode: str) -> int:
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # a user's usual stdout
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, cwd=ROOT, env=env, start_new_session=True)
    os.close(slave)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"ready\n"
        os.close(master)
        master = -1
        return proc.wait(timeout=30)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_the_status_survives_a_hung_up_terminal() -> None:
    assert _run("settle") == 129


def test_negative_control_without_settling_python_exits_120() -> None:
    assert _run("plain") == 120
