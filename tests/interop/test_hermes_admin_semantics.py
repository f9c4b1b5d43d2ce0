"""The admin semantics (Hermes's ``agent/credential_pool_admin.py``), met against the real
Hermes 0.19.0 pool code on one shared home:

- a reset by hermes-admin clears the six status fields, ``failure_reason``,
  ``model_cooldowns`` and ``model_cooldown_observed_at``, and Hermes reads the row as
  cleared: ``_exhausted_until`` is None and ``select()`` picks it;
- a move writes contiguous priorities, so the position survives Hermes's reload;
- ``list`` shows each row's id and priority, in the order and with the values Hermes's
  own entries have.

Negative controls: a reset that leaves the model benches (or the failure reason) behind
is caught by the same checks; a move without the renumber leaves a gap Hermes sorts
differently.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest

from store.config import hermes_code
from store.model import STATUS_FIELDS
from store.ops import actions
from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, run_cli, write_store

pytestmark = pytest.mark.hermes

POOL = "openrouter"
KEY_A = "sk-or-v1-adminAAAAAAAAAAAAAAAAAA0001"
KEY_B = "sk-or-v1-adminBBBBBBBBBBBBBBBBBB0002"
KEY_C = "sk-or-v1-adminCCCCCCCCCCCCCCCCCC0003"
CLEARED = ("failure_reason", "model_cooldowns", "model_cooldown_observed_at")


def _benched_by_hermes(home: Home, hermes) -> None:
    """A sole row benched by Hermes itself, then given per-model benches and a failure
    reason as a newer Hermes writes them (0.19.0 writes neither)."""
    write_store(home, make_store({POOL: [make_row("aaaaaa", label="only", token=KEY_A)]}))
    hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_A)
    assert hermes.select(POOL) is None          # benched: the checks below can fail
    with transaction(home) as doc:
        row = doc["credential_pool"][POOL][0]
        row["failure_reason"] = "rate_limit"
        row["model_cooldowns"] = {"anthropic/claude-sonnet-4": time.time() + 3600}
        row["model_cooldown_observed_at"] = {"anthropic/claude-sonnet-4": time.time()}


def _read_as_cleared(home: Home, hermes) -> None:
    row = read_doc(home)["credential_pool"][POOL][0]
    assert all(row[f] is None for f in STATUS_FIELDS), row
    assert not any(f in row for f in CLEARED), row
    assert isinstance(row["status_cleared_at"], float)
    entry = hermes.entries(POOL)[0]
    assert entry["last_status"] is None and entry["last_error_code"] is None
    assert hermes.exhausted_until(POOL) == {"aaaaaa": None}
    assert hermes.select(POOL) == {"id": "aaaaaa", "label": "only"}
    listed = run_cli(home, "list", POOL).stdout
    assert "models benched" not in listed and "exhausted" not in listed


@pytest.mark.parametrize("via", ["cli", "transaction"])
def test_a_reset_is_read_by_hermes_as_cleared_model_benches_included(tmp_home, hermes, via):
    _benched_by_hermes(tmp_home, hermes)
    assert "models benched" in run_cli(tmp_home, "list", POOL).stdout
    if via == "cli":
        run_cli(tmp_home, "reset", POOL, "only", "--yes")
    else:
        with transaction(tmp_home) as doc:
            actions.reset(doc, POOL, "aaaaaa", time.time())
    _read_as_cleared(tmp_home, hermes)


def test_negative_control_a_status_only_reset_leaves_the_model_bench(tmp_home, hermes, monkeypatch):
    _benched_by_hermes(tmp_home, hermes)

    def status_only(row, now):
        for f in STATUS_FIELDS:
            row[f] = None
        row["status_cleared_at"] = now

    monkeypatch.setattr(policy, "reset", status_only)
    with transaction(tmp_home) as doc:
        actions.reset(doc, POOL, "aaaaaa", time.time())
    assert "model_cooldowns" in read_doc(tmp_home)["credential_pool"][POOL][0]
    with pytest.raises(AssertionError):
        _read_as_cleared(tmp_home, hermes)


def _gappy(home: Home) -> None:
    write_store(home, make_store({POOL: [
        make_row("aaaaaa", label="alpha", priority=0, token=KEY_A),
        make_row("bbbbbb", label="bravo", priority=5, token=KEY_B),
        make_row("cccccc", label="charlie", priority=9, token=KEY_C)]}))


def test_a_move_writes_contiguous_priorities_that_survive_hermes(tmp_home, hermes):
    _gappy(tmp_home)
    run_cli(tmp_home, "priority", POOL, "charlie", "1")
    rows = read_doc(tmp_home)["credential_pool"][POOL]
    assert sorted((r["priority"], r["id"]) for r in rows) == [(0, "aaaaaa"), (1, "cccccc"), (2, "bbbbbb")]
    assert [(e["id"], e["priority"]) for e in hermes.entries(POOL)] == [
        ("aaaaaa", 0), ("cccccc", 1), ("bbbbbb", 2)]
    run_cli(tmp_home, "priority", POOL, "charlie", "0")
    assert hermes.select(POOL) == {"id": "cccccc", "label": "charlie"}
    assert [e["priority"] for e in hermes.entries(POOL)] == [0, 1, 2]


def test_negative_control_a_move_without_the_renumber_is_seen(tmp_home, hermes, monkeypatch):
    _gappy(tmp_home)

    def move_in_place(rows, row, new_priority):
        row["priority"] = new_priority      # no renumber: "1" lands before bravo's 5, not after

    monkeypatch.setattr(policy, "move", move_in_place)
    with transaction(tmp_home) as doc:
        actions.set_priority(doc, POOL, "charlie", 1)
    assert [e["priority"] for e in hermes.entries(POOL)] != [0, 1, 2]


def test_list_shows_id_and_priority_as_hermes_has_them(tmp_home, hermes):
    _gappy(tmp_home)
    run_cli(tmp_home, "priority", POOL, "alpha", "2")
    out = run_cli(tmp_home, "list", POOL).stdout.splitlines()
    shown = [re.search(r"#(\d+)\s+\S+\s+api_key id=(\w+) priority=(\d+) manual", line) for line in out[1:]]
    assert all(shown), out
    ours = [(int(m.group(1)), m.group(2), int(m.group(3))) for m in shown if m]
    theirs = [(i, e["id"], e["priority"]) for i, e in enumerate(hermes.entries(POOL), start=1)]
    assert ours == theirs
    assert out[1].rstrip().endswith("←") and ours[0][1] == hermes.select(POOL)["id"]


def test_the_real_0_19_checkout_is_told_as_0_19(tmp_home, hermes_path):
    """Hermes's installer leaves its code in <home>/hermes-agent: the real 0.19.0 pool code is
    told as the 0.19 generation, so its rules (no only-row cap) give the countdown."""
    (tmp_home.root / "hermes-agent").symlink_to(hermes_path, target_is_directory=True)
    told = hermes_code.detect(tmp_home.root)
    assert told.generation == "0.19" and "hermes-agent" in told.how
    ttls = dataclasses.replace(policy.DEFAULT_TTLS, told=told)
    row = make_row("aaaaaa", token=KEY_A, last_status="exhausted", last_status_at=1000.0, last_error_code=429)
    assert policy.until(row, [row], 2000.0, ttls) == 1000.0 + 3600.0      # 0.19: the full TTL
    assert policy.until(row, [row], 2000.0) == 1000.0 + 60.0              # untold: the newer cap


def test_0_19_agrees_with_the_countdown_it_is_told_by(tmp_home, hermes, hermes_path):
    """The sole key Hermes 0.19.0 benches: hermes-admin, told the generation by the checkout,
    shows exactly Hermes's own _exhausted_until."""
    write_store(tmp_home, make_store({POOL: [make_row("aaaaaa", label="only", token=KEY_A)]}))
    hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_A)
    theirs = hermes.exhausted_until(POOL)["aaaaaa"]
    (tmp_home.root / "hermes-agent").symlink_to(hermes_path, target_is_directory=True)
    listed = {c["id"]: c for c in json.loads(run_cli(tmp_home, "list", POOL, "--json").stdout)
              ["pools"][POOL]["credentials"]}
    assert listed["aaaaaa"]["available_at"] == pytest.approx(theirs, abs=1e-6)
