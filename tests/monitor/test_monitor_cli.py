"""``hermes-admin monitor`` as an operator runs it: arguments checked (exit 2 naming the
argument), a port in use or an exposed bind without keys is exit 3, the inbound-auth rule on
/metrics, one monitor per home, ``monitor status``, SIGTERM, and its own file opened safely."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from store.paths import Home
from store.proxy.edge.inbound import Gate
from tests.conftest import HERMES_ADMIN, cli_env, run_cli
from tests.monitor.helpers import BOUND, Running, canaries_in, canary, exhaust_all, rules, seed_home, wait_until

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("args, named", [
    (["--metrics", "nonsense"], "--metrics"),
    (["--metrics", "127.0.0.1:70000"], "--metrics"),
    (["--metrics", "127.0.0.1:-1"], "--metrics"),
    (["--metrics", "bad host!:9464"], "--metrics"),
    (["--drain-timeout", "-0.5"], "--drain-timeout"),
    (["--drain-timeout", "3600.5"], "--drain-timeout"),
    (["--drain-timeout", "nan"], "--drain-timeout"),
    (["--root", "/nonexistent-root-for-monitor"], "--root"),
    (["--notify", "bogus://" + canary(1)], "--notify"),
])
def test_bad_arguments_exit_2_naming_the_argument(tmp_home: Home, args: list[str], named: str) -> None:
    seed_home(tmp_home, 1)
    proc = run_cli(tmp_home, "monitor", *args, "--check", ok=False)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert canaries_in(proc.stdout + proc.stderr) == []


def test_home_and_root_together_is_exit_2(tmp_home: Home) -> None:
    seed_home(tmp_home, 1)
    proc = run_cli(tmp_home, "monitor", "--root", str(tmp_home.root), "--check", ok=False)
    assert proc.returncode == 2 and "--home or --root" in proc.stderr


def _monitor(home: Home, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(HERMES_ADMIN), "monitor", "--home", str(home.root), *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(home))


def test_a_port_in_use_is_exit_3_saying_so(tmp_home: Home) -> None:
    seed_home(tmp_home, 1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _monitor(tmp_home, "--metrics", f"127.0.0.1:{port}")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and f"port {port} is already in use" in err


def test_beyond_loopback_needs_client_keys(tmp_home: Home) -> None:
    seed_home(tmp_home, 1)
    proc = run_cli(tmp_home, "monitor", "--metrics", "127.0.0.2:0", "--check", ok=False)
    assert proc.returncode == 3 and "client-keys" in proc.stderr


def test_metrics_beyond_loopback_answer_only_a_listed_bearer(tmp_home: Home) -> None:
    """The proxy's rule, reused: 127.0.0.2 is not a loopback spelling, so keys are required."""
    seed_home(tmp_home, 1)
    keys = tmp_home.root / "hermes-admin-proxy-keys"
    keys.write_text("scrape-key-0123456789\n")
    os.chmod(keys, 0o600)
    proc = _monitor(tmp_home, "--metrics", "127.0.0.2:0")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "client keys required" in line, line
        url = line.split("metrics ", 1)[1].split(" ", 1)[0].rstrip(";")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url, timeout=5)  # noqa: S310
        assert err.value.code == 401
        req = urllib.request.Request(url, headers={"Authorization": "Bearer scrape-key-0123456789"})
        with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310
            assert b"hermes_admin_credential_state" in resp.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=BOUND)
    assert proc.returncode == 0


def test_one_monitor_per_home_status_and_sigterm(tmp_home: Home) -> None:
    seed_home(tmp_home, 2)
    first = _monitor(tmp_home, "--metrics", "127.0.0.1:0")
    try:
        assert first.stdout is not None and "metrics http://" in first.stdout.readline()
        second = _monitor(tmp_home, "--metrics", "127.0.0.1:0")
        _out, err = second.communicate(timeout=60)
        assert second.returncode == 3 and "a monitor already runs" in err
        exhaust_all(tmp_home)
        shown = wait_until(lambda: "no usable key" in (p := run_cli(tmp_home, "monitor", "status", ok=False)).stdout
                           and p, what="monitor status to list the alert")
        assert shown.returncode == 0 and "open alert(s)" in shown.stdout
        as_json = json.loads(run_cli(tmp_home, "monitor", "status", "--json").stdout)
        assert as_json["running"] and as_json["status"]["pid"] == first.pid
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=BOUND)
    assert first.returncode == 0
    after = run_cli(tmp_home, "monitor", "status", ok=False)
    assert after.returncode == 1 and "no monitor running" in after.stdout


def test_a_symlink_at_the_status_file_is_never_followed(tmp_home: Home, tmp_path: Path) -> None:
    seed_home(tmp_home, 1)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (tmp_home.root / "hermes-admin-monitor.json").symlink_to(victim)
    logged: list[str] = []
    with Running(home=tmp_home, rules=rules(), gate=Gate(None), log=logged.append) as run:
        exhaust_all(tmp_home)
        wait_until(lambda: run.call(lambda: bool(run.monitor.book.open)), what="the alert to open")
    assert victim.read_text() == "untouched"
    assert (tmp_home.root / "hermes-admin-monitor.json").is_symlink()
    assert any("status file not written" in m for m in logged)
