"""A real Prometheus server (Debian's ``prometheus`` package) scrapes ``hermes-admin monitor`` on
loopback. After a scripted 429 written to the store, Prometheus's HTTP API says the key's state,
seconds until available and time available are what ``hermes-admin list --json`` shows; the
live exposition passes ``promtool check metrics``. Skips, saying why, without the binaries."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests.conftest import HERMES_ADMIN, cli_env, run_cli
from tests.monitor.helpers import BOUND, POOL, free_port, seed_home, wait_until

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None,
                                 reason="prometheus/promtool not installed (.ci/run installs Debian's "
                                        "prometheus package)")]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310  (loopback only)
        return resp.read()


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    try:
        body = json.loads(_get(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"))
    except OSError:
        return []
    return body["data"]["result"] if body.get("status") == "success" else []


def _start_monitor(home: Home) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([str(HERMES_ADMIN), "monitor", "--home", str(home.root), "--metrics", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(home))
    assert proc.stdout is not None
    line = proc.stdout.readline()       # the ready line; the process exits (EOF) if it cannot start
    assert "metrics http://" in line, line + (proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split("metrics ", 1)[1].split(";", 1)[0].strip()


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(BOUND)


@pytest.mark.timeout(180)
def test_prometheus_scrapes_the_state_list_json_shows(tmp_home: Home, tmp_path: Path) -> None:
    seed_home(tmp_home, 2)
    monitor, metrics_url = _start_monitor(tmp_home)
    prom: subprocess.Popen[bytes] | None = None
    try:
        exposition = _get(metrics_url)
        check = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        target = urllib.parse.urlsplit(metrics_url).netloc
        port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: hermes-admin\n    static_configs:\n      - targets: ['{target}']\n")
        prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _query(base, 'up{job="hermes-admin"} == 1'), timeout=60, what="Prometheus's first scrape")

        # The scripted 429: key #1 benched by a second 429 with the provider's reset, as an agent writes it.
        written = time.time()
        with transaction(tmp_home) as doc:
            rows = doc["credential_pool"][POOL]
            policy.mark_exhausted(rows, rows[0], written, code=429, reason="rate_limit_exceeded",
                                  reset_at=written + 1800, failure_reason="rate_limit")
        listed = json.loads(run_cli(tmp_home, "list", "--json").stdout)
        cred = listed["pools"][POOL]["credentials"][0]
        rid = cred["id"]
        assert cred["status"] == "cooling"

        got = wait_until(lambda: _query(base, f'hermes_admin_credential_state{{id="{rid}"}} == 1')
                         and _query(base, f'hermes_admin_credential_state{{id="{rid}",state="cooling"}} == 1'),
                         timeout=60, what="Prometheus to see the 429")
        assert [s["metric"]["state"] for s in got] == [cred["status"]]
        left = _query(base, f'hermes_admin_credential_cooldown_remaining_seconds{{id="{rid}"}}')
        at = _query(base, f'hermes_admin_credential_available_at_timestamp_seconds{{id="{rid}"}}')
        asked = time.time()
        assert float(at[0]["value"][1]) == pytest.approx(cred["available_at"], abs=1e-3)
        # Seconds left were computed at a scrape between the write and the query.
        assert cred["available_at"] - asked <= float(left[0]["value"][1]) <= cred["available_at"] - written
        assert cred["available_at"] - asked <= cred["seconds_left"] <= cred["available_at"] - written
        other = listed["pools"][POOL]["credentials"][1]
        ok = _query(base, f'hermes_admin_credential_state{{id="{other["id"]}"}} == 1')
        assert [s["metric"]["state"] for s in ok] == [other["status"]] == ["ok"]
        assert float(_query(base, f'hermes_admin_pool_usable_credentials{{pool="{POOL}"}}')[0]["value"][1]) == 1.0
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(BOUND)
            except subprocess.TimeoutExpired:
                prom.kill()
        _stop(monitor)
