"""Compatibility with the newest Hermes pool code (issue 9), against fixtures built from
its described behaviour:

1. a per-model cooldown observed at or before the row's ``status_cleared_at`` is ignored;
2. any active per-model cooldown blocks a caller that names no model, so ``next`` points
   where Hermes's ``select()`` would go;
3. a ``last_error_reset_at`` that is not a usable number (true, NaN, Infinity, a string)
   is shown as a data error with the raw value, while availability falls back to
   ``last_status_at + TTL`` as Hermes computes it (spec section 4).
Times are compared exactly.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from store.pools import policy, view
from tests.conftest import make_row

NOW = 1_800_000_000.0


def _row(rid: str, priority: int = 0, **fields: object) -> dict:
    return make_row(rid, priority=priority, token=f"sk-or-v1-{rid}" + "0" * 24, **fields)


# 1. --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("observed, cleared, benched", [
    (NOW - 100, NOW - 50, False),     # observed before the reset: ignored
    (NOW - 50, NOW - 50, False),      # at the reset: ignored
    (NOW - 10, NOW - 50, True),       # after the reset: a real bench
    (NOW - 100, None, True),          # no reset at all
    (None, NOW - 50, True),           # no observation time: cannot be judged stale
])
def test_model_cooldown_before_the_reset_is_ignored(observed, cleared, benched) -> None:
    row = _row("a", model_cooldowns={"gpt-x": NOW + 600})
    if observed is not None:
        row["model_cooldown_observed_at"] = {"gpt-x": observed}
    if cleared is not None:
        row["status_cleared_at"] = cleared
    eff = policy.effective(row, [row], NOW)
    assert (eff.model_benches == {"gpt-x": NOW + 600}) is benched


# 2. --------------------------------------------------------------------------------------------

def _pool() -> list[dict]:
    return [_row("a", 0, model_cooldowns={"gpt-x": NOW + 600},
                 model_cooldown_observed_at={"gpt-x": NOW - 5}),
            _row("b", 1)]


def test_a_model_bench_blocks_a_caller_naming_no_model() -> None:
    rows = _pool()
    assert policy.pick(rows, "fill_first", NOW)["id"] == "b"
    assert policy.pick(rows, "fill_first", NOW, model="other")["id"] == "a"
    assert policy.pick(rows, "fill_first", NOW, model="gpt-x")["id"] == "b"
    chosen = policy.select(rows, "fill_first", NOW)
    assert chosen["id"] == "b" and chosen["request_count"] == 1


def test_next_marker_points_where_select_goes() -> None:
    doc = {"credential_pool": {"openrouter": _pool()}}
    (pv,) = view.build_pools(doc, now=NOW)
    marked = [cv.id for cv in pv.credentials if cv.next]
    assert marked == ["b"] == [policy.select(_pool(), "fill_first", NOW)["id"]]


def test_an_elapsed_model_bench_blocks_nothing() -> None:
    rows = [_row("a", 0, model_cooldowns={"gpt-x": NOW - 1}), _row("b", 1)]
    assert policy.pick(rows, "fill_first", NOW)["id"] == "a"


def test_negative_control_ignoring_model_benches_picks_the_benched_row(monkeypatch) -> None:
    monkeypatch.setattr(policy.Effective, "usable_for", lambda self, model=None: self.usable)
    assert policy.pick(_pool(), "fill_first", NOW)["id"] == "a"


# 3. --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [True, False, math.nan, math.inf, -math.inf, "soon", "NaN", "Infinity",
                                 [1], {"t": 1}, -5, 0])
@pytest.mark.parametrize("code, ttl", [(429, 3600), (401, 300), (500, 3600)])
def test_unusable_reset_time_is_a_data_error_and_falls_back_to_the_ttl(raw, code, ttl) -> None:
    row = _row("a", last_status="exhausted", last_status_at=NOW - 100, last_error_code=code,
               last_error_reset_at=raw)
    other = _row("b", 1)
    eff = policy.effective(row, [row, other], NOW)
    assert policy.until(row, [row, other], NOW) == NOW - 100 + ttl
    assert eff.status == policy.COOLING and eff.available_at == NOW - 100 + ttl
    assert eff.data_error is not None and repr(raw) in eff.data_error


ISO = datetime.fromtimestamp(NOW + 60, tz=timezone.utc).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize("raw", [NOW + 60, (NOW + 60) * 1000, str(NOW + 60), ISO])
def test_usable_reset_times_are_no_data_error(raw) -> None:
    row = _row("a", last_status="exhausted", last_status_at=NOW - 100, last_error_code=429,
               last_error_reset_at=raw)
    eff = policy.effective(row, [row], NOW)
    assert eff.data_error is None
    assert policy.until(row, [row], NOW) == NOW + 60


def test_data_error_is_in_list_json() -> None:
    row = _row("a", last_status="exhausted", last_status_at=NOW - 100, last_error_code=429,
               last_error_reset_at="tomorrow-ish")
    (pv,) = view.build_pools({"credential_pool": {"p": [row]}}, now=NOW)
    assert "'tomorrow-ish'" in pv.credentials[0].to_json()["data_error"]
