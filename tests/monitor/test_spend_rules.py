"""The monitor's ``budget`` and ``burn_rate`` rules, end to end and exactly.

- budget: a key at 85% of its day budget (hermes-admin.yaml, spend from a ledger made with
  sqlite3) is one alert at a local receiver; when the day starts again (the monitor's clock
  moves past 00:00 UTC) its recovery follows. Control: the same ledger corrupt is a notice and
  no alert (unknown is never taken for a spend);
- burn_rate: a 5h window read at 50% then 80% ten minutes later runs out in under 2h: one
  alert; a reading that says the window resets before that is the recovery. Controls: flat
  use, and use that grows but resets first, give nothing;
- the rules' new thresholds are parsed strictly (hypothesis: hostile values name the field).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent import headroom
from store.agent.headroom import RowReadings
from store.authfile import atomic_write_bytes
from store.dialects.readings import Reading
from store.monitor import daemon
from store.monitor import rules as R
from store.monitor.burn import BurnHistory, Trend
from store.paths import Home
from store.redaction.fingerprints import fingerprint
from store.usage.record import LEDGER_FILE, REQUESTS_TABLE
from tests.monitor.helpers import POOL, Running, Webhook, reset_all, rules, seed_home, targets, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def hook() -> Any:
    w = Webhook()
    yield w
    w.close()


def _budget_home(home: Home, cost: float, *, corrupt: bool = False) -> None:
    seed_home(home, 2)
    (home.root / "hermes-admin.yaml").write_text(f"budgets:\n  {POOL}:\n    key: {{day: 2.00}}\n"
                                                 f"    pool: {{day: 10}}\n")
    path = home.root / LEDGER_FILE
    if corrupt:
        path.write_bytes(b"not a database " * 200)
        return
    con = sqlite3.connect(path)
    con.execute(REQUESTS_TABLE)
    con.execute("INSERT INTO requests (at, pool, row_id, cost_usd, cost_status) VALUES (?, ?, ?, ?, ?)",
                (time.time() - 5, POOL, "k00000", cost, "actual"))
    con.commit()
    con.close()


def _budget_posts(hook: Webhook) -> list[dict[str, Any]]:
    return [p for p in hook.got() if "day budget" in str(p.get("title"))]


def test_a_key_at_its_budget_share_alerts_and_recovers_when_the_day_starts_again(
        tmp_home: Home, hook: Webhook, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "SPEND_TICK", 0.2)
    _budget_home(tmp_home, 1.70)
    offset = [0.0]
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url),
                 clock=lambda: time.time() + offset[0],
                 backoff=0.05) as run:
        wait_until(lambda: _budget_posts(hook), what="the budget alert")
        first = _budget_posts(hook)
        assert len(first) == 1 and "[warning]" in first[0]["title"] and "85%" in first[0]["title"]
        assert "$1.70" in first[0]["message"] and "$2.00" in first[0]["message"]
        assert "#1" in first[0]["title"]                      # the key, not the pool (17% of $10)
        offset[0] = 86400.0                                   # the next day: its spend starts again
        wait_until(lambda: len(_budget_posts(hook)) >= 2, what="the budget recovery")
        wait_until(run.idle, what="the monitor to settle")
    posts = _budget_posts(hook)
    assert [p["type"] for p in posts] == ["warning", "success"] and "[resolved]" in posts[1]["title"]


def test_control_an_unreadable_ledger_is_a_notice_and_no_alert(tmp_home: Home, hook: Webhook,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "SPEND_TICK", 0.2)
    _budget_home(tmp_home, 1.70, corrupt=True)
    log: list[str] = []
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url), log=log.append,
                 backoff=0.05) as run:
        wait_until(lambda: any("spend unknown" in m for m in log), what="the notice")
        n = run.call(lambda: run.monitor.evaluations)
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > n + 3, what="more evaluations")
    assert _budget_posts(hook) == []
    assert sum("spend unknown" in m for m in log) == 1          # said once, not at every evaluation


def _sidecar(home: Home, used: float, read_at: float, reset_at: float) -> None:
    fp = fingerprint(f"sk-or-v1-{0:048d}")
    r = Reading("5h", "anthropic-unified", read_at, utilization=used, reset_at=reset_at, length=5 * 3600.0)
    atomic_write_bytes(headroom.sidecar_path(home),
                       headroom.dump({(POOL, "k00000"): RowReadings(fp, {"5h": r})}, time.time()),
                       sync=False, follow_link=False)


def _burn_posts(hook: Webhook) -> list[dict[str, Any]]:
    return [p for p in hook.got() if "window runs out" in str(p.get("title"))]


def test_a_window_burning_out_within_the_bound_alerts_and_recovers(tmp_home: Home, hook: Webhook) -> None:
    seed_home(tmp_home, 2)
    now = time.time()
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        for used, at in ((0.50, now - 600), (0.80, now)):
            n = run.call(lambda: run.monitor.evaluations)
            _sidecar(tmp_home, used, at, now + 3 * 3600)
            reset_all(tmp_home)                                   # a write: the monitor looks again
            wait_until(lambda n=n: run.call(lambda: run.monitor.evaluations) > n, what="an evaluation")
        wait_until(lambda: _burn_posts(hook), what="the burn-rate alert")
        wait_until(run.idle, what="the monitor to settle")
        assert "5h" in _burn_posts(hook)[0]["title"] and "80%" in _burn_posts(hook)[0]["message"]
        # The window says it resets in 100 s: before the projected end, so it does not run out.
        _sidecar(tmp_home, 0.81, now + 1, now + 100)
        reset_all(tmp_home)
        wait_until(lambda: len(_burn_posts(hook)) >= 2, what="the burn-rate recovery")
        wait_until(run.idle, what="the monitor to settle")
    assert [p["type"] for p in _burn_posts(hook)] == ["warning", "success"]


def _trend(points: list[tuple[float, float]], reset_at: float | None = None) -> Trend | None:
    h = BurnHistory()
    for t, used in points:
        r = Reading("5h", "x", t, utilization=used, reset_at=reset_at)
        h.observe("default", {(POOL, "k1"): RowReadings("fp", {"5h": r})})
    return h.trend("default", POOL, "k1", "5h")


def test_the_projection_exactly() -> None:
    t = _trend([(1000.0, 0.5), (1600.0, 0.8)])
    assert t is not None and t.rate == pytest.approx(0.3 / 600) and t.exhausts_at() == pytest.approx(2000.0)
    assert _trend([(1000.0, 0.5), (1600.0, 0.5)]).exhausts_at() is None            # flat: control
    assert _trend([(1000.0, 0.5), (1600.0, 0.8)], reset_at=1900.0).exhausts_at() is None   # resets first
    assert _trend([(1000.0, 0.5), (1030.0, 0.9)]) is None                           # too short a span
    assert _trend([(1000.0, 0.5), (1600.0, 0.9), (1700.0, 0.1)]) is None            # the window reset
    assert _trend([(1000.0, 0.9), (1600.0, 1.0)]).exhausts_at() == 1600.0           # already out


@settings(max_examples=80, deadline=None)
@given(value=st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                       st.text(max_size=30), st.lists(st.integers(), max_size=2)),
       rule=st.sampled_from([("burn_rate", "exhausts_within"), ("budget", "at")]))
def test_hostile_thresholds_are_refused_naming_the_field(value: Any, rule: tuple[str, str]) -> None:
    name, key = rule
    try:
        got = R.parse({"rules": {name: {key: value}}})
    except R.RulesError as exc:
        assert exc.field == f"rules.{name}.{key}"
        return
    t = got[name].threshold
    assert t is not None and (0 < t <= 1.0 if name == "budget" else 0 < t <= R.MAX_SECONDS)


def test_budget_at_takes_100_percent_and_burn_rate_a_duration() -> None:
    got = R.parse({"rules": {"budget": {"at": "100%"}, "burn_rate": {"exhausts_within": "90m"}}})
    assert got["budget"].threshold == 1.0 and got["burn_rate"].threshold == 5400.0
    assert R.defaults()["budget"].threshold == 0.8 and R.defaults()["burn_rate"].threshold == 7200.0
    with pytest.raises(R.RulesError) as err:
        R.parse({"rules": {"budget": {"at": "101%"}}})
    assert err.value.field == "rules.budget.at"
    with pytest.raises(R.RulesError) as err:
        R.parse({"rules": {"burn_rate": {"exhaust_within": "2h"}}})
    assert "exhausts_within" in str(err.value)


def _cap_posts(hook: Webhook) -> list[dict[str, Any]]:
    return [p for p in hook.got() if "5h cap" in str(p.get("title"))]


def test_a_key_near_its_window_cap_alerts_and_recovers_when_the_window_resets(tmp_home: Home,
                                                                             hook: Webhook) -> None:
    """cap 5h: 80% and the rule at 80%: a key at 72% of its 5h window is at 90% of its cap (an
    alert); a reading after the window reset (10%) is the recovery. The other key has no
    reading: nothing about it."""
    seed_home(tmp_home, 2)
    (tmp_home.root / "hermes-admin.yaml").write_text(f"budgets:\n  {POOL}:\n    cap: {{5h: 80%}}\n")
    now = time.time()
    with Running(home=tmp_home, rules=rules(quiet=0.3), targets=targets(hook.url), backoff=0.05) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
        _sidecar(tmp_home, 0.72, now, now + 3 * 3600)
        reset_all(tmp_home)
        wait_until(lambda: _cap_posts(hook), what="the cap alert")
        assert "90%" in _cap_posts(hook)[0]["title"] and "#1" in _cap_posts(hook)[0]["title"]
        _sidecar(tmp_home, 0.10, now + 1, now + 5 * 3600)
        reset_all(tmp_home)
        wait_until(lambda: len(_cap_posts(hook)) >= 2, what="the cap recovery")
        wait_until(run.idle, what="the monitor to settle")
    assert [p["type"] for p in _cap_posts(hook)] == ["warning", "success"]
    assert len({p["title"].split("] ", 1)[1] for p in _cap_posts(hook)}) == 1     # one key only
