"""The exposition: the cached fast path gives prometheus_client's own bytes, label values are
inert and carry no key, and ``promtool check metrics`` accepts it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.exposition import generate_latest

from store.agent.headroom import RowReadings
from store.dialects.readings import Reading
from store.monitor.exposition import Exposition
from store.monitor.metrics import MonitorCollector, MonitorStats
from store.monitor.sample import ProfileSample, ProxyView, Route, Sample, state_at
from store.paths import Home
from store.pools.view import build_pools
from store.redaction.redact import Redactor
from tests.conftest import make_row, make_store
from tests.monitor.helpers import canaries_in, canary

NOW = 1_800_000_000.0
HOME = Home(Path("/nonexistent-monitor-home"))


def _row(i: int, status: str | None, *, label: str | None = None, code: int | None = None,
         reset: float | None = None, count: int = 0) -> dict[str, Any]:
    fields: dict[str, Any] = {"request_count": count}
    if status is not None:
        fields.update(last_status=status, last_status_at=NOW - 10, last_error_code=code,
                      last_error_reset_at=reset)
    return make_row(f"r{i:05d}", label=label, priority=i, token=f"sk-or-v1-{i:048d}", **fields)


def _sample(doc: dict[str, Any], now: float, redactor: Redactor | None = None, **kw: Any) -> Sample:
    pools = build_pools(doc, now=now)
    return Sample([ProfileSample("default", HOME, pools, None, now, redactor=redactor or Redactor(), **kw)])


class _Latest:
    def __init__(self, sample: Sample, now: float) -> None:
        self.sample, self.now, self.stats = sample, now, MonitorStats()

    def __call__(self) -> tuple[Sample, float, MonitorStats]:
        return self.sample, self.now, self.stats


def _both(latest: _Latest) -> tuple[bytes, bytes]:
    collector = MonitorCollector(latest)
    fast = Exposition(collector).render()
    return fast, generate_latest(collector)


def test_a_scrape_shows_what_list_json_shows() -> None:
    doc = make_store({"openrouter": [_row(0, None), _row(1, "exhausted", code=429, reset=NOW + 600, count=7),
                                     _row(2, "dead", code=401)]})
    latest = _Latest(_sample(doc, NOW), NOW + 100)
    text = Exposition(MonitorCollector(latest)).render().decode()
    assert 'hermes_admin_credential_state{id="r00001",label="key-r00001",pool="openrouter",profile="default",' \
           'state="cooling"} 1.0' in text
    assert 'hermes_admin_credential_cooldown_remaining_seconds{id="r00001",label="key-r00001",' \
           'pool="openrouter",profile="default"} 500.0' in text
    assert 'hermes_admin_credential_cooldown_remaining_seconds{id="r00002",label="key-r00002",' \
           'pool="openrouter",profile="default"} +Inf' in text
    assert 'hermes_admin_credential_requests_total{id="r00001",label="key-r00001",pool="openrouter",' \
           'profile="default"} 7.0' in text
    assert 'hermes_admin_credential_last_error_code{id="r00002",label="key-r00002",pool="openrouter",' \
           'profile="default"} 401.0' in text
    assert 'hermes_admin_pool_usable_credentials{pool="openrouter",profile="default"} 1.0' in text


def test_the_cache_follows_the_clock_and_the_writes() -> None:
    """Render, move the clock past a cooldown and write a row: each render equals prometheus_client's."""
    rows = [_row(i, "exhausted" if i % 3 == 0 else None, code=429, reset=NOW + 50 + i) for i in range(30)]
    latest = _Latest(_sample(make_store({"openrouter": rows}), NOW), NOW)
    collector = MonitorCollector(latest)
    fast = Exposition(collector)
    for now in (NOW, NOW + 1, NOW + 60, NOW + 200):
        latest.now = now
        assert fast.render() == generate_latest(collector)
    rows[4] = _row(4, "exhausted", code=402, reset=NOW + 900, count=3)
    latest.sample = _sample(make_store({"openrouter": rows}), NOW + 200)
    assert fast.render() == generate_latest(collector)


hostile_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labels=st.lists(hostile_text, min_size=1, max_size=6),
       states=st.lists(st.sampled_from([None, "exhausted", "dead", "ok"]), min_size=6, max_size=6),
       offsets=st.lists(st.floats(-1000, 1000, allow_nan=False), min_size=6, max_size=6),
       later=st.floats(0, 2000, allow_nan=False))
def test_fast_exposition_is_byte_identical_to_prometheus_client(labels: list[str], states: list[Any],
                                                              offsets: list[float], later: float) -> None:
    rows = [_row(i, states[i], label=lab or None, code=429 if states[i] else None, reset=NOW + offsets[i])
            for i, lab in enumerate(labels)]
    readings = {("openrouter", rows[0]["id"]): RowReadings(None, {"requests": Reading(
        "requests", "openai", NOW, limit=100.0, remaining=3.0, reset_at=NOW + 30)})}
    proxy = ProxyView(8645, True, "running", NOW - 5, NOW, "openrouter", "anthropic", NOW - 3, 10, 1, 0, 2,
                      (Route("openrouter", "openrouter", False, 3, 0, 3, 0), Route("anthropic", "anthropic", True,
                                                                                 1, 1, 0, 0)),
                      {"openrouter": (10, (1, 2, 3), (0, 1, 1))})
    sample = _sample(make_store({"openrouter": rows}), NOW, headroom=readings, proxies=(proxy,))
    fast, reference = _both(_Latest(sample, NOW + later))
    assert fast == reference


def test_label_values_are_redacted_and_inert() -> None:
    key = canary(1)
    rows = [_row(0, None, label=f"evil {key}"), _row(1, None, label="bell\x07 esc\x1b[2J rtl\u202e nl\nx")]
    rows[0]["id"] = f"id-{canary(2)}"
    text = Exposition(MonitorCollector(_Latest(_sample(make_store({"openrouter": rows}), NOW), NOW))).render()
    decoded = text.decode()
    assert canaries_in(decoded) == []
    assert "\x07" not in decoded and "\x1b" not in decoded and "\u202e" not in decoded
    assert 'label="bell\\\\x07 esc\\\\x1b[2J rtl\\\\u202e nl\\\\x0ax"' in decoded


def test_label_redaction_negative_control(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the redactor the same scan finds the canary: the test above can fail."""
    monkeypatch.setattr(Redactor, "redact", lambda self, text: text)
    rows = [_row(0, None, label=f"evil {canary(1)}")]
    text = Exposition(MonitorCollector(_Latest(_sample(make_store({"openrouter": rows}), NOW), NOW))).render()
    assert canaries_in(text.decode()) != []


def test_state_at_ages_a_cooling_credential_like_a_fresh_view() -> None:
    doc = make_store({"openrouter": [_row(0, "exhausted", code=429, reset=NOW + 60), _row(1, None)]})
    old = build_pools(doc, now=NOW)[0].credentials[0]
    for later in (NOW, NOW + 59.5, NOW + 60, NOW + 61):
        fresh = build_pools(doc, now=later)[0].credentials[0].effective
        status, at, left = state_at(old, later)
        assert (status, at, left) == (fresh.status, fresh.available_at, fresh.seconds_left)


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (.ci/run installs Debian's prometheus package)")
def test_promtool_checks_the_exposition() -> None:
    rows = [_row(i, ["exhausted", "dead", None][i % 3], code=429, reset=NOW + 100 + i, label=f"k {i}")
            for i in range(12)]
    readings = {("openrouter", rows[2]["id"]): RowReadings(None, {"5h": Reading(
        "5h", "anthropic-unified", NOW, utilization=0.7, reset_at=NOW + 3600)})}
    text = Exposition(MonitorCollector(_Latest(_sample(make_store({"openrouter": rows}), NOW,
                                                       headroom=readings), NOW))).render()
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert proc.stdout.decode().strip() == "" and proc.stderr.decode().strip() == ""
