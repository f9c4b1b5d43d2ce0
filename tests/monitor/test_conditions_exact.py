"""store.monitor.conditions to the word: every condition a pool, a proxy and the findings can
raise, with each field an alert delivers, on one sample whose times are known; the clock's
next change; and the two time words (tests/monitor/test_alerts.py holds the stories)."""

from __future__ import annotations

import hashlib
import math

from store.agent.headroom import RowReadings
from store.dialects.readings import Reading
from store.monitor import rules as R
from store.monitor.conditions import Evaluation, evaluate, span, utc
from store.monitor.sample import ProfileSample, ProxyView, Sample
from store.pools.times import BAD_TIME
from store.pools.view import build_pools
from store.profiles.findings import Finding
from tests.conftest import make_row, make_store
from tests.monitor.samples import HOME, NOW
from tests.monitor.samples import bench as _bench
from tests.monitor.samples import sample as _sample

assert utc(NOW) == "2027-01-15 08:00:00 UTC"       # the times below are read from this start
WHO = "default/openrouter #{} {} (sk-or-…{})"


def _rows() -> list[dict]:
    return [
        make_row("d", priority=0, label="dead-one", token="sk-or-v1-" + "d" * 48, last_status="dead",
                 last_error_code=401, last_error_reason="invalid_grant", auth_type="oauth",
                 refresh_token="rt-" + "x" * 20),
        _bench("l", 1, 3 * 3600, last_error_reason="rate_limit"),
        make_row("o", priority=2, token="sk-or-v1-" + "o" * 48, auth_type="oauth", last_status="exhausted",
                 last_status_at=NOW - 5, last_error_code=401, last_error_reset_at=NOW + 300, refresh_token="rt"),
        make_row("e", priority=3, token="sk-or-v1-" + "e" * 48, expires_at_ms=int((NOW + 3600) * 1000)),
        make_row("x", priority=4, token="sk-or-v1-" + "x" * 48, expires_at_ms=int((NOW - 60) * 1000)),
        make_row("h", priority=5, token="sk-or-v1-" + "h" * 48),
    ]


def _everything() -> Sample:
    rows = _rows()
    fp = build_pools(make_store({"openrouter": rows}), now=NOW)[0].credentials[5].fingerprint
    low = Reading("requests", "openai", NOW, limit=100.0, remaining=5.0, reset_at=NOW + 30)
    proxy = ProxyView(8645, True, "running", NOW - 900, NOW, "openrouter", "anthropic", NOW - 700, 0, 0, 0, 0)
    shared = Finding("shared_key", "warning", "one key in default and work", ("default", "work"),
                     (("default", "openrouter", "a"), ("work", "openrouter", "b")))
    return _sample(rows, headroom={("openrouter", "h"): RowReadings(fp, {"requests": low})}, proxies=(proxy,),
                   findings=[shared])


def _row_cond(rule, rid, n, label, tail, title, text, severity="warning"):
    who = WHO.format(n, label, tail)
    return {"key": f"{rule}/default/openrouter/{rid}", "rule": rule, "severity": severity, "profile": "default",
            "pool": "openrouter", "id": rid, "label": label, "fingerprint": f"sk-or-…{tail}",
            "title": title.format(who=who), "text": text.format(who=who)}


EXPECTED = [
    {"key": "findings/shared_key/05bad73b7a505213", "rule": "findings", "severity": "warning",
     "profile": "default,work", "pool": None, "id": None, "label": None, "fingerprint": None,
     "title": "finding: shared key", "text": "one key in default and work"},
    _row_cond("key_dead", "d", 1, "dead-one", "dddd", "{who} is dead",
              "{who} went dead (401 invalid_grant). Dead never expires: reset it or give it a new key."),
    _row_cond("long_cooldown", "l", 2, "key-l", "0001", "{who} is cooling for 3h",
              "{who} is benched until 2027-01-15 11:00:00 UTC (in 3h; 429 rate_limit), longer than the 2h "
              "this rule allows."),
    _row_cond("low_headroom", "h", 6, "key-h", "hhhh", "{who} has 5% of its requests window left",
              "{who}: 5% of the requests window left (openai; resets 2027-01-15 08:00:30 UTC), under the 10% "
              "this rule allows."),
    _row_cond("oauth_expiry", "e", 4, "key-e", "eeee", "{who} expires in 1h",
              "{who} expires in 1h (2027-01-15 09:00:00 UTC) and holds no refresh token to renew it."),
    _row_cond("oauth_expiry", "x", 5, "key-x", "xxxx", "{who} expired",
              "{who} expired (2027-01-15 07:59:00 UTC) and holds no refresh token to renew it."),
    _row_cond("oauth_refresh_failed", "d", 1, "dead-one", "dddd", "{who}: OAuth refresh failed",
              "{who} was refused with 401 after its token refresh (401 invalid_grant); it is dead: log in again."),
    _row_cond("oauth_refresh_failed", "o", 3, "key-o", "oooo", "{who}: OAuth refresh failed",
              "{who} was refused with 401 after its token refresh (401); benched until 2027-01-15 08:05:00 UTC."),
    {"key": "proxy_fallback/default/8645", "rule": "proxy_fallback", "severity": "warning", "profile": "default",
     "pool": "openrouter", "id": None, "label": None, "fingerprint": None,
     "title": "default: proxy :8645 on fallback anthropic for 11m 40s",
     "text": "The proxy on port 8645 of profile default serves from anthropic instead of its primary openrouter "
             "since 2027-01-15 07:48:20 UTC."},
]


def test_every_condition_of_a_sample_word_for_word() -> None:
    ev = evaluate(_everything(), R.defaults(), NOW)
    assert [c.to_json() for _, c in sorted(ev.conditions.items())] == EXPECTED
    assert ev.next_change == NOW + 30           # the headroom reading goes stale first


def test_the_next_change_is_the_earliest_clock_event_ahead() -> None:
    rows = _rows()
    ev = evaluate(_sample(rows), R.defaults(), NOW)
    assert ev.next_change == NOW + 300          # key o's bench ends
    proxy = ProxyView(8645, True, "running", NOW - 900, NOW, "openrouter", "anthropic", NOW - 60, 0, 0, 0, 0)
    ev = evaluate(_sample([make_row("a", token="sk-or-v1-" + "a" * 48)], proxies=(proxy,)), R.defaults(), NOW)
    assert ev.next_change == NOW + 540 and not ev.conditions     # the proxy reaches its threshold
    since_start = ProxyView(8645, True, "running", NOW - 100, NOW, "openrouter", "anthropic", None, 0, 0, 0, 0)
    ev = evaluate(_sample([make_row("a", token="sk-or-v1-" + "a" * 48)], proxies=(since_start,)), R.defaults(), NOW)
    assert ev.next_change == NOW + 500          # no "since": counted from the proxy's start
    soon = make_row("s", token="sk-or-v1-" + "s" * 48, expires_at_ms=int((NOW + 8 * 86400) * 1000))
    assert evaluate(_sample([soon]), R.defaults(), NOW).next_change == NOW + 86400   # the expiry warning starts


def test_a_pool_with_no_usable_key_says_how_many_and_when_the_first_returns() -> None:
    rows = [_bench("a", 0, 600), _bench("b", 1, 900),
            make_row("c", priority=2, token="sk-or-v1-" + "c" * 48, last_status="dead", last_error_code=402)]
    cond = evaluate(_sample(rows), R.defaults(), NOW).conditions["pool_empty/default/openrouter"]
    assert cond.to_json() == {
        "key": "pool_empty/default/openrouter", "rule": "pool_empty", "severity": "critical", "profile": "default",
        "pool": "openrouter", "id": None, "label": None, "fingerprint": None,
        "title": "default/openrouter has no usable key",
        "text": "Pool openrouter of profile default has no usable credential: 2 cooling, 1 dead; the first one is "
                "usable again at 2027-01-15 08:10:00 UTC (in 10m)."}
    dead = [make_row("c", token="sk-or-v1-" + "c" * 48, last_status="dead")]
    ev = evaluate(_sample(dead), R.defaults(), NOW)
    assert ev.conditions["pool_empty/default/openrouter"].text == (
        "Pool openrouter of profile default has no usable credential: 0 cooling, 1 dead; none comes back by "
        "itself (all dead).")
    assert ev.next_change is None
    assert "pool_empty/default/openrouter" not in evaluate(_sample(rows + [make_row("u", priority=3)]),
                                                           R.defaults(), NOW).conditions


def test_an_unreadable_store_is_one_condition_naming_why() -> None:
    p = ProfileSample("default", HOME, [], "auth.json: not valid JSON", NOW)
    (cond,) = evaluate(Sample([p], []), R.defaults(), NOW).conditions.values()
    assert cond.to_json() == {
        "key": "store_unreadable/default", "rule": "store_unreadable", "severity": "critical", "profile": "default",
        "pool": None, "id": None, "label": None, "fingerprint": None, "title": "default: auth.json cannot be read",
        "text": "auth.json: not valid JSON. Every write is refused until it is fixed; the monitor shows the last "
                "good read."}


def test_rules_switched_off_raise_nothing() -> None:
    off = R.parse({"rules": {name: False for name in (R.POOL_EMPTY, R.KEY_DEAD, R.LONG_COOLDOWN, R.OAUTH_REFRESH_FAILED,
                                                      R.OAUTH_EXPIRY, R.LOW_HEADROOM, R.PROXY_FALLBACK, R.FINDINGS,
                                                      R.STORE_UNREADABLE)}})
    assert evaluate(_everything(), off, NOW).conditions == {}


def test_time_words() -> None:
    assert [span(s) for s in (0, 0.4, 59.5, 61, 3600, 3661, 86400 * 6 + 3600 * 23 + 5, -5)] == [
        "0s", "0s", "1m", "1m 1s", "1h", "1h 1m", "6d 23h", "0s"]
    assert span(math.inf) == BAD_TIME and span(math.nan) == BAD_TIME
    assert utc(None) == "never" and utc(math.nan) == "never" and utc(math.inf) == "never"
    assert utc(1e287) == BAD_TIME


def test_evaluation_keeps_only_the_earliest_time_ahead() -> None:
    ev = Evaluation()
    for t in (NOW - 1, NOW, math.inf, math.nan, None, NOW + 50, NOW + 70):
        ev.at(t, NOW)
    assert ev.next_change == NOW + 50
    ev.at(NOW + 10, NOW)
    assert ev.next_change == NOW + 10


def _narrowed(profiles=None, pools=None) -> R.Rules:
    body: dict = {}
    if profiles is not None:
        body["profiles"] = profiles
    if pools is not None:
        body["pools"] = pools
    names = (R.POOL_EMPTY, R.KEY_DEAD, R.LONG_COOLDOWN, R.OAUTH_REFRESH_FAILED, R.OAUTH_EXPIRY, R.LOW_HEADROOM,
             R.PROXY_FALLBACK, R.STORE_UNREADABLE)
    return R.parse({"rules": {name: dict(body) for name in names}})


def test_rules_narrowed_to_the_profile_and_pool_still_see_them_and_others_do_not() -> None:
    every = {k for k in (c["key"] for c in EXPECTED) if not k.startswith("findings/")}
    ev = evaluate(_everything(), _narrowed(["default"], ["openrouter"]), NOW)
    assert every <= set(ev.conditions)
    assert not set(evaluate(_everything(), _narrowed(["work"]), NOW).conditions) & every
    pool_scoped = {k for k in every if not k.startswith("proxy_fallback/")}
    assert not set(evaluate(_everything(), _narrowed(pools=["anthropic"]), NOW).conditions) & pool_scoped
    empty = _sample([_bench("a", 0, 600)])
    assert "pool_empty/default/openrouter" in evaluate(empty, _narrowed(["default"], ["openrouter"]), NOW).conditions
    assert evaluate(empty, _narrowed(pools=["anthropic"]), NOW).conditions == {}
    broken = Sample([ProfileSample("default", HOME, [], "auth.json: not valid JSON", NOW)], [])
    assert list(evaluate(broken, _narrowed(["default"]), NOW).conditions) == ["store_unreadable/default"]
    assert evaluate(broken, _narrowed(["work"]), NOW).conditions == {}


def test_findings_of_any_narrowed_profile_each_become_a_condition() -> None:
    rows_less = Finding("shared_refresh_token", "warning", "one refresh token in default and work",
                        ("default", "work"), ())
    elsewhere = Finding("shared_key", "warning", "one key in ops and lab", ("ops", "lab"),
                        (("ops", "openrouter", "a"), ("lab", "openrouter", "b")))
    shared = Finding("shared_key", "warning", "one key in default and work", ("default", "work"),
                     (("default", "openrouter", "a"), ("work", "openrouter", "b")))
    work_only = R.parse({"rules": {"findings": {"profiles": ["work"]}}})
    ev = evaluate(_sample([], findings=[elsewhere, rows_less, shared]), work_only, NOW)
    by_rows = hashlib.sha256(b"default:openrouter:a,work:openrouter:b").hexdigest()[:16]
    by_profiles = hashlib.sha256(b"default,work").hexdigest()[:16]      # a finding with no rows
    assert sorted(ev.conditions) == [f"findings/shared_key/{by_rows}", f"findings/shared_refresh_token/{by_profiles}"]


def test_the_words_of_an_error_fall_back_in_order() -> None:
    rows = [make_row("f", priority=0, token="sk-or-v1-" + "f" * 48, last_status="dead", failure_reason="revoked"),
            make_row("n", priority=1, token="sk-or-v1-" + "n" * 48, last_status="dead"),
            make_row("g", priority=2, token="sk-or-v1-" + "g" * 48, last_status="dead", last_error_code=402,
                     failure_reason="billing")]
    ev = evaluate(_sample(rows), R.defaults(), NOW)
    texts = {k.rsplit("/", 1)[1]: c.text for k, c in ev.conditions.items() if k.startswith("key_dead/")}
    assert "went dead (revoked)." in texts["f"] and "went dead (no error recorded)." in texts["n"]
    assert "went dead (402 billing)." in texts["g"]
    assert ev.conditions["pool_empty/default/openrouter"].text.endswith(
        "0 cooling, 3 dead; none comes back by itself (all dead).")


def test_a_long_cooldown_counts_from_when_the_bench_began_and_only_past_its_bound() -> None:
    def benched(rid: str, i: int, until: float) -> dict:
        return make_row(rid, priority=i, token=f"sk-or-v1-{rid * 48}", last_status="exhausted",
                        last_status_at=NOW - 1800, last_error_code=429, last_error_reset_at=until)
    began = benched("b", 0, NOW + 2 * 3600 - 1800)      # 2h in all since it began: not longer
    longer = benched("c", 1, NOW + 2 * 3600 - 1799)     # 2h 1s
    ev = evaluate(_sample([began, longer, make_row("u", priority=2)]), R.defaults(), NOW)
    assert [k for k in ev.conditions if k.startswith("long_cooldown/")] == ["long_cooldown/default/openrouter/c"]
    assert ev.conditions["long_cooldown/default/openrouter/c"].title.endswith("is cooling for 2h 1s")


def test_token_expiry_edges_and_where_the_time_is_read_from() -> None:
    at_start = make_row("s", priority=0, token="sk-or-v1-" + "s" * 48, expires_at=NOW + 7 * 86400)
    now_exactly = make_row("z", priority=1, token="sk-or-v1-" + "z" * 48, expires_at_ms=int(NOW * 1000))
    renewable = make_row("r", priority=2, token="sk-or-v1-" + "r" * 48, expires_at=NOW + 60, refresh_token="rt")
    ev = evaluate(_sample([at_start, now_exactly, renewable]), R.defaults(), NOW)
    assert ev.conditions["oauth_expiry/default/openrouter/s"].title.endswith("expires in 7d")
    assert ev.conditions["oauth_expiry/default/openrouter/z"].title.endswith(") expired")
    assert "oauth_expiry/default/openrouter/r" not in ev.conditions
    claude = [make_row("c", token="sk-ant-oat01-" + "c" * 40, auth_type="oauth",
                       expires_at_ms=int((NOW + 3600) * 1000))]
    pools = build_pools(make_store({"anthropic": claude}), now=NOW)
    got = evaluate(Sample([ProfileSample("default", HOME, pools, None, NOW)], []), R.defaults(), NOW).conditions
    assert got["oauth_expiry/default/anthropic/c"].text.endswith(
        "expires in 1h (2027-01-15 09:00:00 UTC) and holds no refresh token to renew it.")


def test_headroom_of_every_row_at_its_bound_and_without_a_reset() -> None:
    rows = [make_row(r, priority=i, token=f"sk-or-v1-{r * 48}") for i, r in enumerate("pqt")]
    fps = {cv.id: cv.fingerprint for cv in build_pools(make_store({"openrouter": rows}), now=NOW)[0].credentials}
    def reading(remaining: float, reset_at=None, length=None) -> RowReadings:
        return Reading("requests", "openai", NOW, limit=100.0, remaining=remaining, reset_at=reset_at, length=length)
    headroom = {("openrouter", "p"): RowReadings(fps["p"], {"requests": reading(4.0)}),
                ("openrouter", "q"): RowReadings(fps["q"], {"requests": reading(10.0, NOW + 90)}),
                ("openrouter", "t"): RowReadings(fps["t"], {"requests": reading(3.0, length=30.0)})}
    ev = evaluate(_sample(rows, headroom=headroom), R.defaults(), NOW)
    assert sorted(ev.conditions) == ["low_headroom/default/openrouter/p", "low_headroom/default/openrouter/t"]
    assert "(openai), under the 10% this rule allows." in ev.conditions["low_headroom/default/openrouter/p"].text
    assert ev.next_change == NOW + 30            # t's 30 s window; p's reading lasts the default minute


def test_a_proxy_that_says_no_times_counts_from_this_read() -> None:
    proxy = ProxyView(8645, True, "running", None, NOW, "openrouter", "anthropic", None, 0, 0, 0, 0)
    ev = evaluate(_sample([make_row("a", token="sk-or-v1-" + "a" * 48)], proxies=(proxy,)), R.defaults(), NOW)
    assert ev.conditions == {} and ev.next_change == NOW + 600


def test_the_longest_span_shown_is_a_span() -> None:
    from store.pools.times import LONGEST_SHOWN
    assert span(LONGEST_SHOWN) != BAD_TIME and span(LONGEST_SHOWN + 1) == BAD_TIME
