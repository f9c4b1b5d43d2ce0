"""Every way a `hermes-admin demo` session ends leaves no process and no temp home.

Closing the terminal (`tmux kill-session`: SIGHUP and a hung-up tty), `kill -TERM`,
`kill -INT`, `q`, and EOF on stdin without any signal (a pty whose master closes and
which is not the demo's controlling terminal). Each is checked on the process table
(/proc) and on TMPDIR, where the demo makes its temp home.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import tmux
from tui.app.session_end import HangupWatch
from tui.demo import launch as demo

pytestmark = [pytest.mark.slow]

START_TIMEOUT = 30.0
ROOT = Path(__file__).resolve().parents[2]
EXIT_TIMEOUT = 20.0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state != "Z"


def _demo_pids(tmpdir: Path, timeout: float = START_TIMEOUT) -> list[int]:
    """The children the demo listed in its temp home's pidfile (fake provider + 2 agents)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pidfile in tmpdir.glob(f"hermes-admin-demo-*/home/{demo.PIDFILE}"):
            pids = [int(x) for x in pidfile.read_text().split() if x.isdigit()]
            if len(pids) >= 3:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"the demo listed no 3 children under {tmpdir} within {timeout}s")


def _wait_all_gone(pids: list[int], tmpdir: Path, timeout: float = EXIT_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids) and not list(tmpdir.glob("hermes-admin-demo-*")):
            return
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    homes = [str(p) for p in tmpdir.glob("hermes-admin-demo-*")]
    raise AssertionError(f"still running: {left}; temp homes left: {homes}")


def _children_of(pid: int) -> list[int]:
    """Direct children of *pid*, from the process table (/proc/*/stat's ppid)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _env(tmpdir: Path) -> dict[str, str]:
    # A user's usual environment: buffered stdout (the suite's runner may export
    # PYTHONUNBUFFERED, which hid the hang-up exit-status race of tui.cli.boundary.settle_streams).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return dict(env, TMPDIR=str(tmpdir), TERM="xterm-256color")


def _exe() -> str:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in the venv")
    return exe


@pytest.mark.tmux
@pytest.mark.skipif(not tmux.available(), reason="tmux not installed")
@pytest.mark.parametrize("how", ["kill-session", "SIGTERM", "SIGINT", "q"])
def test_each_way_of_quitting_in_a_terminal_leaves_nothing(tmp_path, how):
    term = tmux.Tmux.start([_exe(), "demo"], size=(120, 40), env=_env(tmp_path))
    try:
        children = _demo_pids(tmp_path)
        term.wait_for("openrouter", timeout=START_TIMEOUT)
        pid = term.pane_pid()
        assert pid is not None and _alive(pid)
        if how == "kill-session":
            term.kill()                      # the terminal goes away: SIGHUP + hung-up tty
        elif how == "q":
            term.send("q")
        else:
            os.kill(pid, getattr(signal, how))
        _wait_all_gone([pid, *children], tmp_path)
    finally:
        term.kill()


@pytest.mark.tmux
@pytest.mark.skipif(not tmux.available() or shutil.which("make") is None, reason="tmux or make missing")
def test_closing_the_terminal_of_make_demo_leaves_nothing(tmp_path):
    """The issue's case: `make demo`, then the terminal goes away (`tmux kill-session`)."""
    _exe()
    term = tmux.Tmux.start(["make", "-s", "demo"], size=(120, 40), env=_env(tmp_path), cwd=ROOT)
    try:
        children = _demo_pids(tmp_path)
        term.wait_for("openrouter", timeout=START_TIMEOUT)
        make = term.pane_pid()
        assert make is not None
        demo_proc = _children_of(make)
        assert demo_proc, "make has no child"
        term.kill()
        _wait_all_gone([make, *demo_proc, *children], tmp_path)
    finally:
        term.kill()


def test_eof_on_stdin_without_a_signal_ends_the_demo(tmp_path):
    """A pty that is not the controlling terminal: closing its master is EOF, no SIGHUP."""
    master, slave = os.openpty()
    proc = subprocess.Popen([_exe(), "demo"], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, env=_env(tmp_path))
    os.close(slave)
    try:
        children = _demo_pids(tmp_path)
        deadline = time.monotonic() + START_TIMEOUT
        seen = b""
        while b"openrouter" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                seen += os.read(master, 65536)
        assert b"openrouter" in seen, "the dashboard never drew"
        os.close(master)
        master = -1
        proc.wait(timeout=EXIT_TIMEOUT)
        assert proc.returncode == 128 + signal.SIGHUP    # told apart from a clean `q`
        _wait_all_gone(children, tmp_path)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_the_hangup_watch_fires_on_hangup_only():
    """The watch wakes on a closed writer (POLLHUP), not on readable data (never steals keys)."""
    r, w = os.pipe()
    fired: list[bool] = []
    watch = HangupWatch(r, lambda: fired.append(True)).start()
    try:
        os.write(w, b"keys")                 # data is not a hang-up: nothing fires
        watch._thread.join(timeout=0.3)
        assert fired == [] and watch._thread.is_alive()
        assert os.read(r, 10) == b"keys"     # and the data is still there for the driver
        os.close(w)
        w = -1
        watch._thread.join(timeout=5)
        assert fired == [True]
    finally:
        if w >= 0:
            os.close(w)
        watch.stop()
        os.close(r)
