"""`hermes-admin demo --fleet` (`make demo-fleet`): a bench on host B shows in host A's
console, and quitting (q or a signal) leaves no process and no temp folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import tmux
from tui.demo import fleet as fleet_demo
from tui.demo.launch import PIDFILE

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")]

ROOT = Path(__file__).resolve().parents[2]
# Processes the demo starts: fake provider, redis-server, and per host a sync daemon and an agent.
CHILDREN = 6
BENCH_TIMEOUT = 60.0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _pids(tmp: Path, n: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pidfile in tmp.glob(f"hermes-admin-fleet-demo-*/{PIDFILE}"):
            pids = [int(x) for x in pidfile.read_text().split() if x.isdigit()]
            if len(pids) >= n:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"no demo pidfile listing {n} processes under {tmp} within {timeout}s")


def _all_gone(pids: list[int], tmp: Path) -> None:
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    assert left == [], subprocess.run(["ps", "-o", "pid,stat,cmd", "-p", ",".join(map(str, left))],
                                      capture_output=True, text=True).stdout
    assert list(tmp.glob("hermes-admin-fleet-demo-*")) == []


def _bench_from_b(screen: str) -> bool:
    return any("◐ benched" in line and "host-b" in line for line in screen.splitlines())


@pytest.mark.tmux
@pytest.mark.skipif(not tmux.available(), reason="tmux not installed")
def test_fleet_demo_shows_the_other_hosts_bench_and_q_leaves_nothing(tmp_path):
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in the venv")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    with tmux.Tmux.start([exe, "demo", "--fleet"], size=(80, 24), env=env) as term:
        pids = _pids(tmp_path, CHILDREN)
        assert all(_alive(p) for p in pids)
        # Host B prefers shared-2 and trips its quota first: A's console shows B's bench.
        try:
            term.wait_until(_bench_from_b, timeout=BENCH_TIMEOUT, interval=0.2,
                            what="a key benched by host-b in host A's fleet view")
        except tmux.TmuxTimeout as exc:
            logs = "".join(f"\n--- {p.name}\n{p.read_text()[-1500:]}"
                           for p in sorted(tmp_path.glob("hermes-admin-fleet-demo-*/logs/*.log")))
            raise AssertionError(f"{exc}\n{logs}") from None
        term.send("q")                      # back to the dashboard
        term.wait_until(lambda s: "fleet: " not in s and "openrouter" in s, timeout=10,
                        what="the dashboard")
        term.send("q")                      # quits
        term.wait_until(lambda _s: term.pane_dead(), timeout=20, interval=0.1, what="the demo to exit")
    _all_gone(pids, tmp_path)


@pytest.mark.tmux
@pytest.mark.skipif(not tmux.available(), reason="tmux not installed")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_running_console_leaves_nothing(tmp_path, sig):
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in the venv")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    with tmux.Tmux.start([exe, "demo", "--fleet"], size=(80, 24), env=env) as term:
        pids = _pids(tmp_path, CHILDREN)
        term.wait_until(lambda s: "● fleet: redis://" in s, timeout=30, what="the fleet view connected")
        pid = term.pane_pid()
        assert pid is not None
        os.kill(pid, sig)
        term.wait_until(lambda _s: term.pane_dead(), timeout=20, interval=0.1, what="the demo to exit")
    _all_gone(pids, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signalled_fleet_demo_leaves_nothing(tmp_path, sig):
    code = "from tui.demo.fleet import run_fleet_demo; run_fleet_demo(open_console=False)"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        pids = _pids(tmp_path, CHILDREN)
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    _all_gone(pids, tmp_path)


def test_the_two_hosts_share_both_keys_in_opposite_order():
    a = fleet_demo.host_doc("http://x", "host-a")["credential_pool"]["openrouter"]
    b = fleet_demo.host_doc("http://x", "host-b")["credential_pool"]["openrouter"]
    assert [r["label"] for r in a] == ["shared-1", "shared-2"]
    assert [r["label"] for r in b] == ["shared-2", "shared-1"]
    assert {r["access_token"] for r in a} == {r["access_token"] for r in b} == set(fleet_demo.KEYS.values())


def test_negative_control_without_the_signal_handlers_sighup_leaves_processes(tmp_path):
    """The check above can fail: with no handler, SIGHUP ends the demo before its cleanup."""
    code = ("from tui.demo import fleet; fleet.CATCH_SIGNALS = (); "
            "fleet.run_fleet_demo(open_console=False)")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids: list[int] = []
    try:
        pids = _pids(tmp_path, CHILDREN)
        proc.send_signal(signal.SIGHUP)
        proc.wait(timeout=20)
        with pytest.raises(AssertionError):
            _all_gone(pids, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in pids:
            if _alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
