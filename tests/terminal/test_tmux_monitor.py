"""The installed `hermes-admin` in a real 80x24 terminal beside a real `hermes-admin monitor`:
the status bar says `monitor · quiet (A)`, then `monitor · 1 alert, 1 critical (A)` once a
pool runs dry, `A` lists the alert, and the words go when the monitor stops."""

from __future__ import annotations

import signal
import subprocess

import pytest

from store.monitor import status
from store.paths import Home
from tests import tmux
from tests.conftest import HERMES_ADMIN, cli_env
from tests.monitor.helpers import BOUND, canaries_in, exhaust_all, seed_home, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]


def test_status_bar_and_view_follow_a_real_monitor_at_80x24(tmp_home: Home) -> None:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    seed_home(tmp_home, 2, canaries=True)
    mon = subprocess.Popen([str(HERMES_ADMIN), "monitor", "--home", str(tmp_home.root), "--metrics", "none",
                            "--quiet"], text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=cli_env(tmp_home))
    try:
        wait_until(lambda: status.is_running(status.read(tmp_home)), what="the monitor to write its status")
        with tmux.Tmux.start([exe, "--home", str(tmp_home.root)], size=(80, 24), env=cli_env(tmp_home)) as term:
            term.wait_for("monitor · quiet (A)", timeout=15)
            exhaust_all(tmp_home)
            screen = term.wait_for("monitor · 1 alert, 1 critical (A)", timeout=BOUND)
            assert canaries_in(screen) == []
            term.send("A")
            screen = term.wait_for("Open alerts: 1", timeout=5)
            assert "✖ critical" in screen and "pool_empty" in screen and "no usable key" in screen
            assert "metrics: off" in screen and canaries_in(screen) == []
            term.send("Escape")
            term.wait_gone("Open alerts", timeout=5)
            mon.send_signal(signal.SIGTERM)
            mon.communicate(timeout=BOUND)
            term.wait_gone("monitor ·", timeout=15)
    finally:
        if mon.poll() is None:
            mon.kill()
            mon.communicate(timeout=BOUND)
