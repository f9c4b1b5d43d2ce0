"""The proxy's log of its last requests, and its ``/metrics``.

- No secret in the log, the status file or ``/metrics``: a canary key in the store, one in the
  client's headers and query, and an upstream that echoes the row's key in its error body and
  a header. Negative control: a log that took the row's token for its route name is caught by
  the same scan.
- The log keeps the last 50 (time, route, credential id, status, latency, outcome), the
  counters count every request.
- ``promtool check metrics`` accepts the proxy's own exposition (histograms included).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import httpx
import pytest

from store.paths import Home
from store.proxy.edge import answers
from store.proxy.observing.stats import status_path
from tests.conftest import make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import CONFIG, running_chain_proxy

pytestmark = pytest.mark.slow
ROW_KEY = "sk-or-v1-logCANARYrowkey" + "5" * 24
SPARE_KEY = "sk-or-v1-logCANARYspare" + "6" * 25
CLIENT_SECRET = "sk-client-logCANARY" + "7" * 24
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CANARIES = (ROW_KEY, SPARE_KEY, CLIENT_SECRET, "logCANARY")


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def _home(home: Home, up: ScriptedUpstream) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("or0log", token=ROW_KEY, priority=0, base_url=up.url + "/api/v1"),
        make_row("or1log", token=SPARE_KEY, priority=1, base_url=up.url + "/api/v1")]}))
    home.config.write_text(CONFIG.split("fallback_providers")[0])


def _traffic(p, up: ScriptedUpstream) -> None:
    echo = {"error": {"message": f"invalid request for key {ROW_KEY}", "type": "invalid_request_error"}}
    up.script(ROW_KEY, http(400, {"X-Echo": f"Bearer {ROW_KEY}"}, echo), http(200))
    headers = {"Authorization": f"Bearer {CLIENT_SECRET}", "X-Api-Key": CLIENT_SECRET}
    first = httpx.post(p.url + f"/chat/completions?key={CLIENT_SECRET}", json=MSG, headers=headers, timeout=30)
    second = httpx.post(p.url + "/chat/completions", json=MSG, headers=headers, timeout=30)
    assert (first.status_code, second.status_code) == (400, 200)


def _everything(p, home: Home) -> str:
    p.settled()
    p.server._write_status()
    metrics = httpx.get(p.url[:-3] + "/metrics", timeout=10).text
    return status_path(home, p.server.port).read_text() + metrics


def test_the_request_log_and_metrics_hold_no_secret(tmp_home: Home, up) -> None:
    _home(tmp_home, up)
    with running_chain_proxy(tmp_home) as p:
        _traffic(p, up)
        shown = _everything(p, tmp_home)
        log = json.loads(status_path(tmp_home, p.server.port).read_text())["recent_requests"]
    assert [c for c in CANARIES if c in shown] == []
    assert [(e["route"], e["id"], e["status"], e["outcome"], e["tries"]) for e in log] == [
        ("openrouter", "or0log", 400, "passed_on", 1), ("openrouter", "or0log", 200, "served", 1)]
    assert all(e["path"] == "/v1/chat/completions" and e["ms"] >= e["upstream_ms"] >= 0 for e in log)
    assert 'hermes_admin_proxy_route_requests_total{code="400",route="openrouter"} 1.0' in shown


def test_control_a_log_that_keeps_the_token_is_caught(tmp_home: Home, up, monkeypatch) -> None:
    real = answers.Answers.mark

    def leaky(self, headers, attempt):
        real(self, headers, attempt)
        answers.trace.served_by(attempt.selection.pool, attempt.selection.row_id, attempt.selection.token, False)

    monkeypatch.setattr(answers.Answers, "mark", leaky)
    _home(tmp_home, up)
    with running_chain_proxy(tmp_home) as p:
        _traffic(p, up)
        shown = _everything(p, tmp_home)
    assert ROW_KEY in shown


def test_the_log_keeps_the_last_50_and_the_counters_count_all(tmp_home: Home, up) -> None:
    _home(tmp_home, up)
    with running_chain_proxy(tmp_home) as p:
        with httpx.Client(timeout=30) as c:
            for _ in range(60):
                assert c.post(p.url + "/chat/completions", json=MSG).status_code == 200
        p.settled()
        st = p.server.status()
    assert len(st["recent_requests"]) == 50
    rids = [int(e["rid"].rsplit("-", 1)[1]) for e in st["recent_requests"]]
    assert rids == list(range(11, 61))
    assert st["counters"]["route_requests"] == [{"route": "openrouter", "code": 200, "n": 60}]
    assert st["latency"]["added_seconds"]["count"] == 60 == st["latency"]["upstream_seconds"]["count"]
    assert st["pool_totals"] == {"openrouter": {"requests": 60, "rate_limited": 0}}


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (.ci/run installs Debian's prometheus package)")
def test_promtool_checks_the_proxys_own_metrics(tmp_home: Home, up) -> None:
    _home(tmp_home, up)
    up.script(SPARE_KEY, http(200))
    up.script(ROW_KEY, http(429, {"Retry-After": "120"}, {"error": {"message": "slow down"}}))
    with running_chain_proxy(tmp_home) as p:
        for _ in range(3):
            httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
        p.server._log_notices()
        text = httpx.get(p.url[:-3] + "/metrics", timeout=10).content
    assert b"hermes_admin_proxy_added_latency_seconds_bucket" in text
    assert b'hermes_admin_proxy_pool_rate_limited_total{pool="openrouter"} 2.0' in text
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
