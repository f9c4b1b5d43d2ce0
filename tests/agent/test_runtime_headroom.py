"""The agent runtime uses headroom before the 429 (#21): readings of every answer are recorded
against the row that served it; a row with nothing left until T is not picked until T and is
benched in the store with that reset; a threshold makes a row yield; least_used can weigh
what is left. With a fake clock: no sleeps, no timed asserts."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.agent.headroom import BENCH_REASON, SIDECAR, Headroom, load
from store.agent.outcomes import OK, RETRY, ROTATED, Result
from store.agent.pool_client import PoolClient
from store.config.settings import Settings
from store.dialects.registry import read_headers
from store.lock import lock_is_free
from store.paths import Home
from store.pools import policy
from store.redaction.fingerprints import fingerprint
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store

NOW = 1_800_000_000.0
KEY_A = "sk-or-v1-" + "a" * 44 + "A001"
KEY_B = "sk-or-v1-" + "b" * 44 + "B002"
EMPTY = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
         "x-ratelimit-reset-requests": "30s"}
PLENTY = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "450",
          "x-ratelimit-reset-requests": "30s"}


class Clock:
    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def seed(home: Home, **a: object) -> None:
    write_store(home, make_store({"openrouter": [make_row("aaa111", token=KEY_A, priority=0, **a),
                                                 make_row("bbb222", token=KEY_B, priority=1)]}))


def client(home: Home, clock: Clock, **kw: object) -> PoolClient:
    return PoolClient(home, "openrouter", clock=clock, env={}, **kw)


def rows(home: Home) -> dict[str, dict]:
    return {r["id"]: r for r in read_doc(home)["credential_pool"]["openrouter"]}


def test_a_2xx_saying_nothing_left_benches_the_row_until_the_reset(tmp_home: Home) -> None:
    seed(tmp_home)
    clock = Clock()
    c = client(tmp_home, clock)
    assert c.select().row_id == "aaa111"
    decision = c.report(Result(200, EMPTY))
    assert decision.action == OK and "headroom" in (decision.note or "")
    a = rows(tmp_home)["aaa111"]
    # An ordinary bench (Hermes honours last_error_reset_at as it is), saying where it came from.
    assert a["last_status"] == "exhausted" and a["last_error_code"] == 429
    assert a["last_error_reset_at"] == NOW + 30 and a["last_error_reason"] == BENCH_REASON
    assert "rate-limit headers" in a["last_error_message"] and a["failure_reason"] == "rate_limit"
    assert rows(tmp_home)["bbb222"]["last_status"] is None
    for _ in range(3):                      # not picked until T...
        assert c.select().row_id == "bbb222"
        c.report(Result(200, PLENTY))
    clock.t = NOW + 31                      # ...then picked again (fill_first)
    assert c.select().row_id == "aaa111"


def test_control_a_2xx_with_quota_left_benches_nothing(tmp_home: Home) -> None:
    seed(tmp_home)
    c = client(tmp_home, Clock())
    c.select()
    before = tmp_home.auth.read_bytes()
    assert c.report(Result(200, PLENTY)).action == OK
    assert tmp_home.auth.read_bytes() == before
    assert c.select().row_id == "aaa111"


def test_the_hold_binds_to_the_secret_a_rekeyed_row_starts_afresh(tmp_home: Home) -> None:
    seed(tmp_home)
    clock = Clock()
    c = client(tmp_home, clock)
    c.select()
    c.report(Result(200, EMPTY))
    with transaction(tmp_home) as doc:      # the operator resets it and puts a new key in
        row = doc["credential_pool"]["openrouter"][0]
        policy.reset(row, NOW)
        row["access_token"] = "sk-or-v1-" + "c" * 44 + "C003"
    assert c.select().row_id == "aaa111"    # the readings were the old secret's


def test_a_429_that_says_nothing_left_rotates_at_once(tmp_home: Home) -> None:
    seed(tmp_home)
    c = client(tmp_home, Clock())
    c.select()
    d = c.report(Result(429, EMPTY, "rate_limit_exceeded", "Rate limit reached"))
    assert d.action == ROTATED and d.selection.row_id == "bbb222"
    assert rows(tmp_home)["aaa111"]["last_error_reset_at"] == NOW + 30


def test_control_a_429_without_readings_is_retried_once(tmp_home: Home) -> None:
    seed(tmp_home)
    c = client(tmp_home, Clock())
    c.select()
    assert c.report(Result(429, {}, "rate_limit_exceeded", "Rate limit reached")).action == RETRY


def test_anthropic_reset_is_used_when_the_429_carries_no_other(tmp_home: Home) -> None:
    seed(tmp_home)
    c = client(tmp_home, Clock())
    c.select()
    headers = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:40Z"}
    c.report(Result(429, headers, "rate_limit_error", "rate limited"))
    assert rows(tmp_home)["aaa111"]["last_error_reset_at"] == 1800000040.0


def test_a_threshold_makes_a_row_yield_and_still_serves_when_all_are_low(tmp_home: Home) -> None:
    seed(tmp_home)
    clock = Clock()
    low = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "4",
           "x-ratelimit-reset-requests": "60s"}
    c = client(tmp_home, clock, settings=Settings(pool_thresholds={"openrouter": 0.05}))
    c.select()
    c.report(Result(200, low))
    assert c.select().row_id == "bbb222"               # yields to the row above the threshold
    assert rows(tmp_home)["aaa111"]["last_status"] is None   # a yield is not a bench
    c.report(Result(200, low))                          # now both are at 4%
    assert c.select().row_id == "aaa111"               # none above: the low ones still serve


def test_control_without_a_threshold_the_low_row_keeps_serving(tmp_home: Home) -> None:
    seed(tmp_home)
    low = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "4",
           "x-ratelimit-reset-requests": "60s"}
    c = client(tmp_home, Clock(), settings=Settings())
    c.select()
    c.report(Result(200, low))
    assert c.select().row_id == "aaa111"


def test_least_used_weighs_headroom_behind_the_option(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaa111", token=KEY_A, priority=0, request_count=0),
        make_row("bbb222", token=KEY_B, priority=1, request_count=9)]}))
    tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: least_used\n")
    room = Headroom(tmp_home, Clock())
    low = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "10",
           "x-ratelimit-reset-requests": "60s"}
    room.record("openrouter", "aaa111", fingerprint(KEY_A), read_headers(low, NOW))
    weighed = client(tmp_home, Clock(), headroom=room, settings=Settings(least_used_weighs_headroom=True))
    assert weighed.select().row_id == "bbb222"         # 90%+ left (no reading: full) beats 10%
    plain = client(tmp_home, Clock(), headroom=room, settings=Settings())
    assert plain.select().row_id == "aaa111"           # the control: request counts alone


def test_readings_are_written_behind_never_under_the_lock(tmp_home: Home, monkeypatch) -> None:
    seed(tmp_home)
    seen: list[bool] = []
    real = Headroom.flush

    def watched(self: Headroom, force: bool = False) -> bool:
        seen.append(lock_is_free(tmp_home.lock))
        return real(self, force)

    monkeypatch.setattr(Headroom, "flush", watched)
    clock = Clock()
    c = client(tmp_home, clock)
    c.select()
    c.report(Result(200, EMPTY))            # a bench transaction, then the flush
    c.select()
    clock.t += 1.1                          # written behind at most once a second
    c.report(Result(429, PLENTY, "rate_limit_exceeded", "slow down"))
    assert seen and all(seen)
    doc = json.loads((tmp_home.root / SIDECAR).read_text())
    assert KEY_A not in json.dumps(doc) and KEY_B not in json.dumps(doc)
    assert {e["id"] for e in doc["rows"]} == {"aaa111", "bbb222"}
    # The probe itself can see a held lock (the check above could fail).
    with transaction(tmp_home):
        assert not lock_is_free(tmp_home.lock)


def test_a_reading_from_another_process_holds_the_row_after_a_flush(tmp_home: Home) -> None:
    seed(tmp_home)
    other = Headroom(tmp_home, Clock())
    other.record("openrouter", "aaa111", fingerprint(KEY_A), read_headers(
        {**EMPTY, "x-ratelimit-remaining-requests": "3"}, NOW))
    other.record("openrouter", "aaa111", fingerprint(KEY_A), read_headers(
        {"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "0",
         "x-ratelimit-reset-tokens": "1m"}, NOW))
    assert other.flush(force=True)
    c = client(tmp_home, Clock())
    assert c.headroom.follow()               # what the other process wrote
    assert c.select().row_id == "bbb222"


HEADER_NAMES = st.sampled_from([
    "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
    "x-ratelimit-remaining-tokens", "x-ratelimit-reset", "x-ratelimit-remaining", "retry-after",
    "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-unified-5h-utilization", "anthropic-ratelimit-unified-5h-reset", "ratelimit",
    "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset"])
VALUES = st.one_of(st.sampled_from(["0", "-1", "1e308", "nan", "inf", "6m0s", "99999999999999999", "1.5",
                                    "2027-01-15T08:00:40Z", '"d";r=0;t=1e300', "0.99", "", "0s"]),
                   st.text(max_size=30))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=st.dictionaries(HEADER_NAMES, VALUES, max_size=6), status=st.sampled_from([200, 429]))
def test_hostile_headers_never_raise_and_every_bench_is_bounded(tmp_home: Home, headers, status) -> None:
    seed(tmp_home)
    (tmp_home.root / SIDECAR).unlink(missing_ok=True)
    c = client(tmp_home, Clock())
    c.select()
    c.report(Result(status, headers, "rate_limit_exceeded" if status == 429 else None))
    for r in rows(tmp_home).values():
        reset = r.get("last_error_reset_at")
        assert reset is None or NOW < reset <= NOW + 366 * 86400
    for entry in load(tmp_home, NOW).values():       # what was kept reads back checked
        for reading in entry.windows.values():
            assert reading.reset_at is None or reading.reset_at <= NOW + 366 * 86400
