"""`hermes-admin demo` in a real terminal: a key cools down live, and `q` leaves no process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.proxy.observing.stats import read_statuses
from tests import tmux
from tui.demo import launch as demo

pytestmark = [pytest.mark.slow, pytest.mark.tmux]

COOLING_TIMEOUT = 30.0
TRAFFIC_TIMEOUT = 30.0
CHILDREN = 4            # the fake provider, the proxy, two agents
ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _wait_pids(pidfile: Path, n: int, timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pidfile.exists():
            pids = [int(x) for x in pidfile.read_text().split() if x.isdigit()]
            if len(pids) >= n:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"{pidfile} did not list {n} processes within {timeout}s")


def _openrouter_cooling(screen: str) -> bool:
    for line in screen.splitlines():
        if "openrouter" in line:
            m = re.search(r"(\d+) cooling", line)
            if m and int(m.group(1)) >= 1:
                return True
    return False


@pytest.mark.skipif(not tmux.available(), reason="tmux not installed")
def test_demo_shows_a_key_cooling_and_quits_cleanly(tmp_path):
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in the venv")
    home = tmp_path / "demo-home"
    pidfile = home / demo.PIDFILE
    with tmux.Tmux.start([exe, "demo", "--home", str(home)], size=(140, 45)) as term:
        pids = _wait_pids(pidfile, CHILDREN)
        assert all(_alive(p) for p in pids)
        # The seeded openrouter keys all start ok; a cooling one on screen was benched live.
        seeded = demo.seed_store("http://x", time.time())["credential_pool"]["openrouter"]
        assert all(r["last_status"] is None for r in seeded)
        try:
            term.wait_until(_openrouter_cooling, timeout=COOLING_TIMEOUT, interval=0.2,
                            what="an openrouter key cooling down")
        except tmux.TmuxTimeout as exc:
            logs = "".join(f"\n--- {p.name}\n{p.read_text()[-2000:]}"
                           for p in sorted((home / "demo-logs").glob("*.log")))
            raise AssertionError(f"{exc}\n{logs}") from None
        term.send("q")
        term.wait_until(lambda _s: term.pane_dead(), timeout=15, interval=0.1,
                        what="the demo to exit")
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if _alive(p)] == []
    assert not pidfile.exists()


def test_demo_without_dashboard_ends_its_processes(tmp_path):
    """run_demo itself (no terminal): children started, store seeded, all ended after."""
    home = tmp_path / "h"
    seen: list[int] = []
    import threading

    def watch():
        try:
            seen.extend(_wait_pids(home / demo.PIDFILE, CHILDREN, timeout=15))
        except AssertionError:
            pass

    t = threading.Thread(target=watch)
    t.start()
    assert demo.run_demo(home, open_dashboard=False, duration=3) == 0
    t.join(timeout=20)
    assert len(seen) == CHILDREN
    assert [p for p in seen if _alive(p)] == []
    assert (Home(home).auth).exists() and (Home(home).config).exists()
    # The demo refuses to seed over an existing store.
    from store.errors import BadInput

    with pytest.raises(BadInput):
        demo.run_demo(home, open_dashboard=False, duration=0)
    assert os.stat(home).st_mode & 0o077 == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_signalled_demo_leaves_no_process(tmp_path, sig):
    """SIGTERM/SIGINT run the cleanup; after SIGKILL the children notice their parent
    is gone and exit on their own."""
    home = tmp_path / "h"
    code = f"from tui.demo.launch import run_demo; run_demo({str(home)!r}, open_dashboard=False)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        pids = _wait_pids(home / demo.PIDFILE, CHILDREN)
        proc.send_signal(sig)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 8
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    assert left == [], subprocess.run(["ps", "-o", "pid,ppid,stat,cmd", "-p",
                                       ",".join(map(str, left))], capture_output=True, text=True).stdout


def test_the_demo_agents_go_through_the_proxy_which_ends_with_the_demo(tmp_path):
    """The agents' requests reach the fake provider through the demo's proxy (its status
    counts them), and SIGTERM to the demo leaves no proxy process."""
    home = tmp_path / "h"
    code = f"from tui.demo.launch import run_demo; run_demo({str(home)!r}, open_dashboard=False)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        pids = _wait_pids(home / demo.PIDFILE, CHILDREN)
        deadline = time.monotonic() + TRAFFIC_TIMEOUT
        status: dict = {}
        while time.monotonic() < deadline:
            status = next(iter(read_statuses(Home(home))), {})
            if status.get("requests_total", 0) > 0 and status.get("credentials"):
                break
            time.sleep(0.1)
        assert status.get("requests_total", 0) > 0, status
        proxy_pid = status["pid"]
        assert proxy_pid in pids and _alive(proxy_pid)
        # Requests were served with the store's credentials: the pools the proxy used.
        assert {c["pool"] for c in status["credentials"]} & {"openai-codex", "openrouter"}
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 8
    while _alive(proxy_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(proxy_pid)
    assert [p for p in pids if _alive(p)] == []
