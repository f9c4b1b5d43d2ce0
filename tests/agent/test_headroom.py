"""store.agent.headroom: readings kept per row, written behind to a sidecar, read back checked."""

from __future__ import annotations

import json
import os

import pytest

from store.agent.headroom import SIDECAR, Headroom, load
from store.agent.verdicts import LIMITED, Verdict
from store.dialects.openai import read_openrouter_key
from store.dialects.registry import read_headers
from store.errors import StoreUnreadable
from store.ops.probe_report import run_probe
from store.paths import Home
from tests.conftest import make_row, make_store, write_store

NOW = 1_800_000_000.0
ZERO = {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "30s"}
KEY = "sk-or-v1-" + "d" * 48


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def test_record_flush_and_load_round_trip_without_a_secret(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("a1", token=KEY)]}))
    before = tmp_home.auth.read_bytes()
    clock = Clock()
    h = Headroom(tmp_home, clock)
    h.record("openrouter", "a1", "sk-or-…dddd", read_headers(ZERO, NOW))
    assert h.flush()
    raw = (tmp_home.root / SIDECAR).read_bytes()
    assert KEY.encode() not in raw and b"NaN" not in raw
    assert os.stat(tmp_home.root / SIDECAR).st_mode & 0o777 == 0o600
    assert tmp_home.auth.read_bytes() == before              # never auth.json
    rows = load(tmp_home, NOW)
    assert rows[("openrouter", "a1")].windows["requests"].reset_at == NOW + 30
    assert h.blocked_until("openrouter", "a1", "sk-or-…dddd", NOW) == NOW + 30
    assert h.blocked_until("openrouter", "a1", "sk-or-…eeee", NOW) is None   # another secret: not this reading


def test_write_behind_at_most_once_a_second(tmp_home: Home) -> None:
    clock = Clock()
    h = Headroom(tmp_home, clock)
    h.record("p", "a1", None, read_headers(ZERO, NOW))
    assert h.flush()
    h.record("p", "a1", None, read_headers({**ZERO, "x-ratelimit-remaining-requests": "1"}, NOW + 0.5))
    clock.t += 0.5
    assert not h.flush()                    # too soon
    clock.t += 0.6
    assert h.flush()
    assert load(tmp_home, clock.t)[("p", "a1")].windows["requests"].remaining == 1


def test_two_processes_merge_what_each_read(tmp_home: Home) -> None:
    a, b = Headroom(tmp_home, Clock()), Headroom(tmp_home, Clock())
    a.record("p", "a1", None, read_headers(ZERO, NOW))
    b.record("p", "b2", None, read_headers(ZERO, NOW))
    assert a.flush(force=True) and b.flush(force=True)
    assert set(load(tmp_home, NOW)) == {("p", "a1"), ("p", "b2")}


def test_forged_sidecar_values_are_dropped_and_a_broken_file_is_named(tmp_home: Home) -> None:
    path = tmp_home.root / SIDECAR
    path.write_text(json.dumps({"rows": [
        {"pool": "p", "id": "a1", "fp": None, "readings": [
            {"window": "requests", "source": "openai", "read_at": NOW, "remaining": 0, "limit": 5,
             "reset_at": 1e300}]},
        {"pool": "p\x1b[2J", "id": "x", "readings": []}, "garbage", {"pool": "p", "id": "c3", "readings": "no"}]}))
    rows = load(tmp_home, NOW)
    assert list(rows) == [("p", "a1")] and rows[("p", "a1")].windows["requests"].reset_at is None
    path.write_text('{"rows": NaN}')
    with pytest.raises(StoreUnreadable, match=SIDECAR):
        load(tmp_home, NOW)


def test_a_symlinked_sidecar_is_refused_and_its_target_kept(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"p": [make_row("a1", token=KEY)]}))
    before = tmp_home.auth.read_bytes()
    (tmp_home.root / SIDECAR).symlink_to(tmp_home.auth)
    h = Headroom(tmp_home, Clock())
    h.record("p", "a1", None, read_headers(ZERO, NOW))
    assert not h.flush(force=True)
    assert tmp_home.auth.read_bytes() == before
    assert h.notices and "symlink" in h.notices[-1]


def test_a_probe_keeps_what_the_endpoint_said_of_the_windows(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row(
        "a1", token=KEY, last_status="exhausted", last_status_at=NOW - 10, last_error_code=402,
        last_error_reset_at=NOW + 3600)]}))
    credits = tuple(read_openrouter_key({"data": {"limit": 10, "limit_remaining": 0}}, NOW))
    run_probe(tmp_home, "openrouter", NOW, verdict_fn=lambda row, token: Verdict(LIMITED, "x", NOW, credits))
    rows = load(tmp_home, NOW)
    assert rows[("openrouter", "a1")].windows["credits"].left == 0.0
    assert KEY not in (tmp_home.root / SIDECAR).read_text()
