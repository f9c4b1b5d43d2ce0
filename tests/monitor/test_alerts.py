"""The pure parts: each rule's condition from a sample and a clock, and the alert book's
dedupe, recovery and quiet period, by property (with the control that has no quiet period)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent.headroom import RowReadings
from store.dialects.readings import Reading
from store.monitor import rules as R
from store.monitor.alerts import FIRING, RESOLVED, AlertBook
from store.monitor.conditions import Condition, evaluate
from store.monitor.sample import ProxyView, Sample
from store.pools.view import build_pools
from store.profiles.findings import Finding
from tests.conftest import make_row, make_store
from tests.monitor.samples import NOW
from tests.monitor.samples import bench as _bench
from tests.monitor.samples import sample as _sample


def _keys(sample: Sample, now: float = NOW, rules: R.Rules | None = None) -> set[str]:
    return set(evaluate(sample, rules or R.defaults(), now).conditions)


def test_pool_empty_holds_until_the_first_cooldown_ends_and_says_when() -> None:
    sample = _sample([_bench("a", 0, 600), _bench("b", 1, 900)])
    ev = evaluate(sample, R.defaults(), NOW)
    assert "pool_empty/default/openrouter" in ev.conditions
    assert ev.next_change == NOW + 600                   # the daemon sleeps until then, no polling
    assert "pool_empty/default/openrouter" not in _keys(sample, NOW + 600)


def test_dead_long_cooldown_refresh_failure_and_expiry() -> None:
    rows = [make_row("d", priority=0, token="sk-or-v1-" + "d" * 48, last_status="dead", last_error_code=401,
                     last_error_reason="invalid_grant", auth_type="oauth", refresh_token="rt-" + "x" * 20),
            _bench("l", 1, 3 * 3600),
            make_row("e", priority=2, token="sk-or-v1-" + "e" * 48, expires_at_ms=int((NOW + 86400) * 1000)),
            make_row("f", priority=3, token="sk-or-v1-" + "f" * 48, expires_at_ms=int((NOW + 30 * 86400) * 1000))]
    got = _keys(_sample(rows))
    assert {"key_dead/default/openrouter/d", "oauth_refresh_failed/default/openrouter/d",
            "long_cooldown/default/openrouter/l", "oauth_expiry/default/openrouter/e"} <= got
    assert "oauth_expiry/default/openrouter/f" not in got and "pool_empty/default/openrouter" not in got
    off = R.parse({"rules": {"key_dead": False, "long_cooldown": {"longer_than": "4h"}}})
    assert not any(k.startswith(("key_dead", "long_cooldown")) for k in _keys(_sample(rows), rules=off))


def test_low_headroom_counts_only_fresh_readings_of_the_same_secret() -> None:
    rows = [make_row("h", priority=0, token="sk-or-v1-" + "h" * 48)]
    fp = build_pools(make_store({"openrouter": rows}), now=NOW)[0].credentials[0].fingerprint
    low = Reading("requests", "openai", NOW, limit=100.0, remaining=5.0, reset_at=NOW + 30)
    sample = _sample(rows, headroom={("openrouter", "h"): RowReadings(fp, {"requests": low})})
    ev = evaluate(sample, R.defaults(), NOW)
    assert "low_headroom/default/openrouter/h" in ev.conditions and ev.next_change == NOW + 30
    assert "low_headroom/default/openrouter/h" not in _keys(sample, NOW + 30)          # stale: not current
    rekeyed = _sample(rows, headroom={("openrouter", "h"): RowReadings("sk-or-…zzzz", {"requests": low})})
    assert "low_headroom/default/openrouter/h" not in _keys(rekeyed)


def test_proxy_on_fallback_fires_after_its_threshold() -> None:
    proxy = ProxyView(8645, True, "running", NOW - 900, NOW, "openrouter", "anthropic", NOW - 60, 0, 0, 0, 0)
    sample = _sample([make_row("a", token="sk-or-v1-" + "a" * 48)], proxies=(proxy,))
    ev = evaluate(sample, R.defaults(), NOW)
    assert not any(k.startswith("proxy_fallback") for k in ev.conditions) and ev.next_change == NOW - 60 + 600
    assert "proxy_fallback/default/8645" in _keys(sample, NOW + 540)


def test_root_findings_become_conditions() -> None:
    f = Finding("shared_key", "warning", "one key in default and work", ("default", "work"),
                (("default", "openrouter", "a"), ("work", "openrouter", "b")))
    sample = _sample([make_row("a", token="sk-or-v1-" + "a" * 48)], findings=[f])
    assert any(k.startswith("findings/shared_key/") for k in _keys(sample))
    only_refresh = R.parse({"rules": {"findings": {"kinds": ["shared_refresh_token"]}}})
    assert not any(k.startswith("findings/") for k in _keys(sample, rules=only_refresh))


COND = Condition("pool_empty/default/openrouter", "pool_empty", "critical", "default", "no key", "no key")


def test_one_alert_while_it_holds_one_recovery_after_the_quiet_period() -> None:
    book = AlertBook(60.0)
    assert [n.kind for n in book.update({COND.key: COND}, NOW)] == [FIRING]
    for t in range(1, 50):
        assert book.update({COND.key: COND}, NOW + t) == []          # deduplicated
    assert book.update({}, NOW + 50) == [] and book.next_due() == NOW + 110
    assert book.update({COND.key: COND}, NOW + 80) == []             # came back: still the same alert
    assert book.update({}, NOW + 90) == []
    assert [n.kind for n in book.update({}, NOW + 150)] == [RESOLVED]
    assert book.open == {} and book.next_due() is None


def _flap(book: AlertBook, pattern: list[bool], step: float) -> tuple[list[str], float]:
    kinds: list[str] = []
    t = NOW
    for on in pattern:
        kinds += [n.kind for n in book.update({COND.key: COND} if on else {}, t)]
        t += step
    return kinds, t - NOW


@settings(max_examples=200, deadline=None)
@given(pattern=st.lists(st.booleans(), min_size=1, max_size=400), step=st.floats(0.001, 5.0),
       quiet=st.floats(0.5, 60.0))
def test_flapping_stays_within_the_quiet_period_bound(pattern: list[bool], step: float, quiet: float) -> None:
    kinds, duration = _flap(AlertBook(quiet), pattern, step)
    bound = 1 + int(duration // quiet)
    assert kinds.count(FIRING) <= bound and kinds.count(RESOLVED) <= bound
    assert all(a != b for a, b in zip(kinds, kinds[1:], strict=False))      # firing, resolved, firing...


def test_the_bound_catches_a_book_without_a_quiet_period() -> None:
    """Negative control: 1,000 flaps 10 ms apart, no quiet period: one alert per flap."""
    pattern = [True, False] * 1000
    kinds, duration = _flap(AlertBook(0.0), pattern, 0.01)
    assert kinds.count(FIRING) == 1000 > 1 + int(duration // 2.0)
    kinds, duration = _flap(AlertBook(2.0), pattern, 0.01)
    assert kinds.count(FIRING) <= 1 + int(duration // 2.0)
