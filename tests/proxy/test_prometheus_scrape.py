"""A real Prometheus server (Debian's ``prometheus`` package) scrapes the proxy's own ``/metrics``
on an exposed bind, with a client key from ``authorization: {credentials_file: ...}`` as
docs/metrics.md says: its HTTP API then shows the requests the proxy served, by route and
status code, and the added-latency histogram's count. Negative control: a second job without
the key is refused (``up == 0``), so the first one's success is the key's doing. Skips, saying
why, without the binaries."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from store.paths import Home
from store.proxy.edge.inbound import gate_for
from tests.monitor.helpers import free_port, wait_until
from tests.proxy_helpers import running_proxy, seed
from tui.demo.fake_provider import FakeProvider

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("prometheus") is None,
                                 reason="prometheus is not installed (.ci/run installs Debian's prometheus package)")]
CLIENT_KEY = "hapk-prometheus-scrape-000000000000000001"
HOST = "127.0.0.2"      # not loopback-only in the gate's eyes: a client key is required
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}",
                                    timeout=5) as resp:  # noqa: S310  (loopback only)
            body = json.loads(resp.read())
    except OSError:
        return []
    return body["data"]["result"] if body.get("status") == "success" else []


@pytest.mark.timeout(180)
def test_prometheus_scrapes_the_proxy_with_a_client_key(tmp_home: Home, tmp_path: Path) -> None:
    keys = tmp_home.root / "hermes-admin-proxy-keys"
    keys.write_text(CLIENT_KEY + "\n")
    os.chmod(keys, 0o600)
    cred = tmp_path / "scrape-key"
    cred.write_text(CLIENT_KEY)
    os.chmod(cred, 0o600)
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        with running_proxy(tmp_home, host=HOST, gate=gate_for(HOST, keys)) as p:
            for _ in range(3):
                r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30,
                               headers={"Authorization": f"Bearer {CLIENT_KEY}"})
                assert r.status_code == 200
            target = f"{HOST}:{p.server.port}"
            port = free_port()
            (tmp_path / "prometheus.yml").write_text(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                f"  - job_name: proxy\n    authorization:\n      credentials_file: {cred}\n"
                f"    static_configs:\n      - targets: ['{target}']\n"
                f"  - job_name: proxy-no-key\n    static_configs:\n      - targets: ['{target}']\n")
            prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                                     f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                     f"--web.listen-address=127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            base = f"http://127.0.0.1:{port}"
            try:
                wait_until(lambda: _query(base, 'up{job="proxy"} == 1'), timeout=60, what="the keyed scrape")
                got = wait_until(lambda: _query(base, 'hermes_admin_proxy_route_requests_total'
                                                      '{job="proxy",route="openrouter",code="200"}'),
                                 timeout=30, what="the proxy's counters in Prometheus")
                assert float(got[0]["value"][1]) == 3.0
                count = _query(base, 'hermes_admin_proxy_added_latency_seconds_count{job="proxy"}')
                assert float(count[0]["value"][1]) == 3.0
                # Control: the same target without the key is refused.
                wait_until(lambda: _query(base, 'up{job="proxy-no-key"} == 0'), timeout=60,
                           what="the keyless scrape to be refused")
                assert _query(base, 'hermes_admin_proxy_route_requests_total{job="proxy-no-key"}') == []
            finally:
                prom.terminate()
                try:
                    prom.wait(20)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait(10)
