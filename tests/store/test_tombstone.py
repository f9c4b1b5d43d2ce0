"""The operator-reset tombstone (`status_cleared_at`) against a simulated *newer* Hermes.

A newer Hermes agent that still remembers a cooldown merges its in-memory rows into
the file by id when it saves (spec sections 3 and 5):
- rows on disk it does not hold are kept;
- on disk, a newer exhausted/dead status beats an older in-memory one;
- a disk `status_cleared_at` newer than the in-memory `last_status_at` means the
  operator reset the row after the agent saw the error: the reset wins.
The agent below is that rule as a pure function, writing through our own
transaction (it takes the same lock and reads afresh, as Hermes does).
"""

from __future__ import annotations

import copy
import time

from store.model import STATUS_FIELDS, parse_epoch
from store.ops import actions
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store

POOL = "openrouter"
KEY_A = "sk-or-v1-tombstoneAAAAAAAAAAAAAA01"
KEY_B = "sk-or-v1-tombstoneBBBBBBBBBBBBBB02"
_CLEARABLE = (*STATUS_FIELDS, "failure_reason", "model_cooldowns", "model_cooldown_observed_at")


def _status_at(row: dict) -> float:
    return parse_epoch(row.get("last_status_at")) or 0.0


def merge_row(disk: dict, memory: dict) -> dict:
    """What a newer agent writes for one row it holds in memory."""
    merged = copy.deepcopy(memory)
    if disk.get("last_status") in ("exhausted", "dead") and _status_at(disk) > _status_at(memory):
        for f in _CLEARABLE:
            if f in disk:
                merged[f] = copy.deepcopy(disk[f])
    cleared = parse_epoch(disk.get("status_cleared_at"))
    if cleared is not None and cleared > _status_at(memory) and _status_at(disk) <= cleared:
        for f in STATUS_FIELDS:
            merged[f] = None
        for f in ("failure_reason", "model_cooldowns", "model_cooldown_observed_at"):
            merged.pop(f, None)
        merged["status_cleared_at"] = disk["status_cleared_at"]
    return merged


def newer_agent_merge(disk_rows: list[dict], memory_rows: list[dict]) -> list[dict]:
    """Merge in-memory rows into disk rows by id; disk rows the agent lacks are kept."""
    on_disk = {r.get("id"): r for r in disk_rows}
    held = {r["id"] for r in memory_rows}
    out = [merge_row(on_disk[m["id"]], m) if m["id"] in on_disk else copy.deepcopy(m)
           for m in memory_rows]
    out.extend(copy.deepcopy(r) for r in disk_rows if r.get("id") not in held)
    return out


def agent_saves(home, memory_rows: list[dict]) -> None:
    with transaction(home) as doc:
        doc["credential_pool"][POOL] = newer_agent_merge(doc["credential_pool"][POOL], memory_rows)


def _setup(home, t0: float) -> list[dict]:
    """Disk and agent memory both hold A benched at t0 for an hour; returns the memory."""
    rows = [
        make_row("aaaaaa", label="alpha", priority=0, token=KEY_A, last_status="exhausted",
                 last_status_at=t0, last_error_code=429, last_error_reason="rate_limit_exceeded",
                 last_error_reset_at=t0 + 3600, failure_reason="rate_limit", request_count=4),
        make_row("bbbbbb", label="bravo", priority=1, token=KEY_B),
    ]
    write_store(home, make_store({POOL: rows}))
    memory = copy.deepcopy(rows)
    memory[0]["request_count"] = 9  # the agent kept working meanwhile (on other keys' behalf)
    return memory


def _row(home, rid: str) -> dict:
    return next(r for r in read_doc(home)["credential_pool"][POOL] if r["id"] == rid)


def test_reset_survives_a_newer_agent_writing_its_stale_cooldown_back(tmp_home):
    t0 = time.time() - 120
    memory = _setup(tmp_home, t0)
    t_reset = time.time()
    with transaction(tmp_home) as doc:
        actions.reset(doc, POOL, "alpha", t_reset)

    agent_saves(tmp_home, memory)

    a = _row(tmp_home, "aaaaaa")
    assert a["last_status"] is None and a["last_error_reset_at"] is None
    assert "failure_reason" not in a
    assert a["status_cleared_at"] == t_reset
    assert a["request_count"] == 9  # the agent's own fields still land


def test_negative_control_without_the_stamp_the_stale_cooldown_comes_back(tmp_home):
    t0 = time.time() - 120
    memory = _setup(tmp_home, t0)
    with transaction(tmp_home) as doc:
        row = actions.resolve(doc, POOL, "alpha")
        actions.reset(doc, POOL, "alpha", time.time())
        del row["status_cleared_at"]  # a reset the way 0.19.0's reset_statuses does it

    agent_saves(tmp_home, memory)

    a = _row(tmp_home, "aaaaaa")
    assert a["last_status"] == "exhausted"
    assert a["last_error_reset_at"] == t0 + 3600


def test_an_error_after_the_reset_still_benches_the_row(tmp_home):
    """The tombstone only beats older memory: a fresh 429 seen after the reset wins."""
    t0 = time.time() - 120
    memory = _setup(tmp_home, t0)
    t_reset = time.time() - 60
    with transaction(tmp_home) as doc:
        actions.reset(doc, POOL, "alpha", t_reset)
    t_new = time.time()
    memory[0].update(last_status_at=t_new, last_error_reset_at=t_new + 1800)

    agent_saves(tmp_home, memory)

    a = _row(tmp_home, "aaaaaa")
    assert a["last_status"] == "exhausted" and a["last_status_at"] == t_new


def test_a_newer_cooldown_on_disk_beats_older_memory(tmp_home):
    """Our manual cooldown is newer than what the agent remembers: it stays."""
    t0 = time.time() - 120
    memory = _setup(tmp_home, t0)
    memory[1]["last_status"] = "ok"
    t_ours = time.time()
    with transaction(tmp_home) as doc:
        actions.cooldown(doc, POOL, "bravo", t_ours + 900, t_ours, "maintenance")

    agent_saves(tmp_home, memory)

    b = _row(tmp_home, "bbbbbb")
    assert b["last_status"] == "exhausted"
    assert b["last_error_reason"] == "maintenance" and b["last_error_reset_at"] == t_ours + 900


def test_rows_added_by_hermes_admin_survive_the_agent_save(tmp_home):
    memory = _setup(tmp_home, time.time() - 120)
    with transaction(tmp_home) as doc:
        added = actions.add_key(doc, POOL, "sk-or-v1-tombstoneCCCCCCCCCCCCCC03", time.time()).changes[0].id

    agent_saves(tmp_home, memory)

    assert [r["id"] for r in read_doc(tmp_home)["credential_pool"][POOL]] == ["aaaaaa", "bbbbbb", added]
