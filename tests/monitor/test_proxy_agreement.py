"""The monitor's proxy metrics are the proxy's own: same families, same labels (plus profile
and port), same values, histograms included.

A real proxy in this process falls back after a 429 storm and serves a few requests; its
``/metrics`` is scraped, then the monitor's exposition is built from the status file the
proxy wrote at the same moment (``store.monitor.sample.proxy_view``, as the monitor reads
it). Every ``hermes_admin_proxy_*`` sample of the proxy's text is in the monitor's, with
``profile`` and ``port`` added, at the same value. Negative control: a status file with one
counter changed is caught by the same comparison. ``promtool check metrics`` accepts the
monitor's text too; its control, a counter without ``_total``, is refused by promtool.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from store.monitor.exposition import Exposition
from store.monitor.metrics import MonitorCollector, MonitorStats
from store.monitor.sample import ProfileSample, Sample, proxy_view
from store.paths import Home
from store.pools.view import build_pools
from store.proxy.observing.stats import status_path
from store.redaction.redact import Redactor
from tests.conftest import read_doc
from tests.proxy_helpers import OR_KEYS, running_proxy, seed
from tui.demo.fake_provider import FakeProvider, rate_limited

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str, *, drop: tuple[str, ...] = ()) -> Samples:
    """Every hermes_admin_proxy_* sample of an exposition: (name, labels without *drop*) -> value."""
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.startswith("hermes_admin_proxy_") and s.name != "hermes_admin_proxy_up":
                labels = tuple(sorted((k, v) for k, v in s.labels.items() if k not in drop))
                out[(s.name, labels)] = s.value
    return out


def monitor_text(home: Home, status: dict[str, Any], now: float) -> str:
    view = proxy_view(status, now)
    assert view is not None and view.live
    profile = ProfileSample("default", home, build_pools(read_doc(home), now=now), None, now, proxies=(view,),
                            redactor=Redactor())
    return Exposition(MonitorCollector(lambda: (Sample([profile]), now, MonitorStats()))).render().decode()


def differences(proxy: Samples, monitor: Samples) -> list[str]:
    return [f"{name}{dict(labels)}: proxy {value}, monitor {monitor.get((name, labels))}"
            for (name, labels), value in sorted(proxy.items()) if monitor.get((name, labels)) != value]


@pytest.fixture
def scraped(tmp_home: Home) -> tuple[Home, str, dict[str, Any], int]:
    with FakeProvider() as fake:
        seed(tmp_home, fake)
        for k in OR_KEYS:
            fake.script(k, rate_limited(retry_after=600))
        with running_proxy(tmp_home) as p:
            for _ in range(4):
                r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
                assert r.status_code == 200 and r.headers["x-hermes-pool"] == "nous"
            p.settled()         # the last answer's bookkeeping runs after its bytes
            p.server._log_notices()
            text = httpx.get(p.url[:-3] + "/metrics", timeout=10).text
            p.server._write_status()
            st = json.loads(status_path(tmp_home, p.server.port).read_text())
            port = p.server.port
    return tmp_home, text, st, port


def test_the_monitor_shows_the_proxys_own_metrics(scraped) -> None:
    home, text, st, port = scraped
    ours = samples(text)
    fallbacks = ours[("hermes_admin_proxy_fallbacks_total", (("route", "nous"),))]
    assert fallbacks >= 1.0      # and one more when a restore check came between two requests
    assert any(name == "hermes_admin_proxy_added_latency_seconds_bucket" for name, _l in ours)
    assert ours[("hermes_admin_proxy_route_requests_total", (("code", "200"), ("route", "nous")))] == 4.0
    mon_text = monitor_text(home, st, time.time())
    mon = samples(mon_text, drop=("profile", "port"))
    assert differences(ours, mon) == []
    assert set(ours) == set(mon)
    assert (f'hermes_admin_proxy_fallbacks_total{{port="{port}",profile="default",route="nous"}} {fallbacks}'
            in mon_text)


def test_control_a_changed_counter_is_caught(scraped) -> None:
    home, text, st, _port = scraped
    n = st["counters"]["fallbacks"]["nous"]
    st["counters"]["fallbacks"]["nous"] = n + 1
    found = differences(samples(text), samples(monitor_text(home, st, time.time()), drop=("profile", "port")))
    assert found == [f"hermes_admin_proxy_fallbacks_total{{'route': 'nous'}}: proxy {float(n)}, monitor {n + 1.0}"]


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (.ci/run installs Debian's prometheus package)")
def test_promtool_checks_the_monitors_proxy_metrics_and_refuses_a_bad_one(scraped) -> None:
    home, _text, st, _port = scraped
    good = monitor_text(home, st, time.time()).encode()
    proc = subprocess.run(["promtool", "check", "metrics"], input=good, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    bad = (b"# HELP hermes_admin_proxy_oops Requests\n# TYPE hermes_admin_proxy_oops counter\n"
           b"hermes_admin_proxy_oops 1\n")
    proc = subprocess.run(["promtool", "check", "metrics"], input=bad, capture_output=True, timeout=60)
    assert proc.returncode != 0 and b"_total" in proc.stdout + proc.stderr
