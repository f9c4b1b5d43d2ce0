"""Real deliveries: Apprise posting to a json:// webhook on a local aiohttp receiver and to a
local SMTP server (aiosmtpd), from a monitor following a real home through its watcher.

- a pool running out gives exactly one alert at each target, and a recovery exactly one
  recovery; every delivery is an audit line;
- no canary key (one in every field of the home) appears in any payload, audit line or the
  status file; the negative control with redaction switched off shows the scan finds one;
- a delivery that keeps failing is retried with the bound and audited as failed;
- deduplication: its negative control (a book that forgets) gives more than one alert.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from typing import Any

import pytest

from store.monitor import alerts
from store.monitor.conditions import Condition
from store.monitor.delivery import Deliverer
from store.paths import Home
from store.redaction.redact import Redactor
from tests.monitor.helpers import (
    POOL,
    Running,
    Smtp,
    Webhook,
    audit_lines,
    canaries_in,
    exhaust_all,
    free_port,
    reset_all,
    rules,
    seed_home,
    targets,
    wait_until,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def hook() -> Any:
    w = Webhook()
    yield w
    w.close()


@pytest.fixture
def smtp() -> Any:
    s = Smtp()
    yield s
    s.close()


def _kinds(posts: list[dict[str, Any]]) -> list[str]:
    return ["resolved" if p.get("type") == "success" else "firing" for p in posts]


def _pool_posts(posts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in posts if "no usable key" in str(p.get("title"))]


def test_a_pool_running_out_is_one_alert_and_its_recovery_one_recovery(tmp_home: Home, hook: Webhook,
                                                                       smtp: Smtp) -> None:
    seed_home(tmp_home, 2, canaries=True)
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url, smtp.url),
                 backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home, seconds=4 * 3600)     # also long cooldowns: alerts that name each row
        wait_until(lambda: _pool_posts(hook.got()) and len(smtp.messages) >= 3, what="the firing alerts")
        wait_until(run.idle, what="the monitor to settle")
        assert _kinds(_pool_posts(hook.got())) == ["firing"]
        reset_all(tmp_home)
        wait_until(lambda: len(_pool_posts(hook.got())) >= 2, what="the recovery")
        wait_until(run.idle, what="the monitor to settle")
        status_doc = (tmp_home.root / "hermes-admin-monitor.json").read_text()
    posts = _pool_posts(hook.got())
    assert _kinds(posts) == ["firing", "resolved"]
    assert "[critical]" in posts[0]["title"] and "[resolved]" in posts[1]["title"]
    subjects = [t.splitlines()[0] for t in smtp.texts()]
    assert sum("no usable key" in s and "critical" in s for s in subjects) == 1
    assert sum("no usable key" in s and "resolved" in s for s in subjects) == 1
    # Every alert sent is an audit line, at each target.
    sent = [a for a in audit_lines(tmp_home) if a.get("action") == "alert-sent" and a.get("rule") == "pool_empty"]
    assert sorted(a["alert"] for a in sent) == ["firing", "firing", "resolved", "resolved"]
    # No canary in anything that left: payloads, mails, audit log, status file.
    everything = "\n".join(hook.raw + smtp.raw + smtp.texts()) + tmp_home.audit.read_text() + status_doc
    assert canaries_in(everything) == []
    assert stat.S_IMODE(os.stat(tmp_home.root / "hermes-admin-monitor.json").st_mode) == 0o600


def test_the_canary_scan_finds_a_key_when_redaction_is_off(tmp_home: Home, hook: Webhook,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control for the test above: payloads built without the redactor carry canaries."""
    seed_home(tmp_home, 2, canaries=True)
    monkeypatch.setattr(Redactor, "redact", lambda self, text: text if isinstance(text, str) else str(text))
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home, seconds=4 * 3600)     # long cooldowns: alerts that name each row
        wait_until(lambda: any("is cooling" in str(p.get("title")) for p in hook.got()), what="a row's alert")
        wait_until(run.idle, what="the monitor to settle")
    assert canaries_in("\n".join(hook.raw)) != []


def test_a_failing_target_is_retried_with_the_bound_and_audited(tmp_home: Home, hook: Webhook) -> None:
    seed_home(tmp_home, 1)
    dead = f"json://127.0.0.1:{free_port()}/nobody"     # nothing listens there
    with Running(home=tmp_home, rules=rules(quiet=0.3, retries=2, long_cooldown=False),
                 targets=targets(dead, hook.url), backoff=0.01) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: _pool_posts(hook.got()), what="the alert at the working target")
        wait_until(run.idle, what="the monitor to settle")
        deliveries = run.call(lambda: list(run.monitor.deliveries))
    failed = [d for d in deliveries if d.result == "failed"]
    assert len(failed) == 1 and failed[0].attempts == 3          # 1 + retries, then given up
    assert failed[0].error and "127.0.0.1" in failed[0].error
    lines = [a for a in audit_lines(tmp_home) if a.get("action") == "alert-failed"]
    assert len(lines) == 1 and lines[0]["attempts"] == 3 and lines[0]["target"].startswith("json://")


class _Forgetful(alerts.AlertBook):
    """A book with no memory between evaluations: what dedupe protects against."""

    def update(self, active: Any, now: float) -> list[alerts.Notification]:
        self.open.clear()
        return super().update(active, now)


def test_dedupe_negative_control_a_forgetful_book_alerts_again(tmp_home: Home, hook: Webhook) -> None:
    seed_home(tmp_home, 2)
    with Running(home=tmp_home, rules=rules(quiet=0.3, long_cooldown=False), targets=targets(hook.url),
                 backoff=0.05) as run:
        run.call(lambda: setattr(run.monitor, "book", _Forgetful(0.3)))
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: _pool_posts(hook.got()), what="the first alert")
        # Another write that leaves the pool empty: a real book stays silent, this one does not.
        exhaust_all(tmp_home, seconds=7200)
        wait_until(lambda: len(_pool_posts(hook.got())) >= 2, what="the duplicate the control must show")
    assert _kinds(_pool_posts(hook.got()))[:2] == ["firing", "firing"]


def test_a_repeated_write_while_the_pool_stays_empty_sends_nothing_more(tmp_home: Home, hook: Webhook) -> None:
    seed_home(tmp_home, 2)
    with Running(home=tmp_home, rules=rules(quiet=0.3, long_cooldown=False), targets=targets(hook.url),
                 backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: _pool_posts(hook.got()), what="the alert")
        seen = run.call(lambda: run.monitor.evaluations)
        for seconds in (7200, 9000, 10800):
            exhaust_all(tmp_home, seconds=seconds)
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > seen + 1, what="the writes to be seen")
        wait_until(run.idle, what="the monitor to settle")
    assert _kinds(_pool_posts(hook.got())) == ["firing"]


def test_a_thousand_flaps_through_real_delivery_stay_within_the_quiet_bound(tmp_home: Home, hook: Webhook) -> None:
    """1,000 flaps, 10 ms apart on the book's clock (10 s of flapping), through the real
    Deliverer to the webhook: at most 1 + 10 // quiet alerts and as many recoveries. The
    control without a quiet period makes one alert per flap, far above the bound."""
    cond = Condition("pool_empty/default/openrouter", "pool_empty", "critical", "default",
                     "default/openrouter has no usable key", "no usable key", pool=POOL)
    quiet, step, flaps = 2.0, 0.01, 1000

    def run(book: alerts.AlertBook) -> list[alerts.Notification]:
        out: list[alerts.Notification] = []
        t = 1_000_000.0
        for i in range(flaps * 2):
            out += book.update({cond.key: cond} if i % 2 == 0 else {}, t)
            t += step
        out += book.update({}, t + quiet)   # settles: the last recovery
        return out

    duration = flaps * 2 * step + quiet
    bound = 1 + int(duration // quiet)
    sent = run(alerts.AlertBook(quiet))
    firing = [n for n in sent if n.kind == alerts.FIRING]
    resolved = [n for n in sent if n.kind == alerts.RESOLVED]
    assert 1 <= len(firing) <= bound and len(resolved) <= bound
    deliverer = Deliverer(targets(hook.url), retries=0, redactor=lambda _n: Redactor(),
                          audit_home=lambda _n: tmp_home, stop=threading.Event())
    for n in sent:
        assert [d.result for d in deliverer.deliver(n)] == ["sent"]
    assert len(hook.got()) == len(sent) <= 2 * bound
    assert len(audit_lines(tmp_home)) == len(sent)
    control = run(alerts.AlertBook(0.0))
    assert len([n for n in control if n.kind == alerts.FIRING]) == flaps > bound


def test_status_file_lists_open_alerts_and_deliveries_without_secrets(tmp_home: Home, hook: Webhook) -> None:
    seed_home(tmp_home, 2, canaries=True)
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: _pool_posts(hook.got()), what="the alert")
        wait_until(run.idle, what="the monitor to settle")
        doc = json.loads((tmp_home.root / "hermes-admin-monitor.json").read_text())
    assert doc["state"] == "running" and doc["pid"] == os.getpid()
    assert any(a["rule"] == "pool_empty" for a in doc["open_alerts"])
    assert any(d["result"] == "sent" for d in doc["last_deliveries"])
    assert doc["targets"] == [hook.url]
    assert canaries_in(json.dumps(doc)) == []
    after = json.loads((tmp_home.root / "hermes-admin-monitor.json").read_text())
    assert after["state"] == "stopped"


def test_a_restarted_monitor_takes_over_open_alerts(tmp_home: Home, hook: Webhook) -> None:
    """No second alert for a condition that still holds across a restart; one recovery when it ends."""
    seed_home(tmp_home, 2)
    kw = {"home": tmp_home, "rules": rules(quiet=0.3, long_cooldown=False), "targets": targets(hook.url),
          "backoff": 0.05}
    with Running(**kw) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        exhaust_all(tmp_home)
        wait_until(lambda: _pool_posts(hook.got()), what="the alert")
        wait_until(run.idle, what="the monitor to settle")
    with Running(**kw) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the restarted monitor's evaluation")
        wait_until(run.idle, what="the monitor to settle")
        assert _kinds(_pool_posts(hook.got())) == ["firing"]
        reset_all(tmp_home)
        wait_until(lambda: len(_pool_posts(hook.got())) >= 2, what="the recovery")
        wait_until(run.idle, what="the monitor to settle")
    assert _kinds(_pool_posts(hook.got())) == ["firing", "resolved"]
