"""Unknown data survives every CLI verb (RELIABILITY.md item 14).

One Hermes-shaped store holds everything a real home may hold: unknown top-level
keys, unknown row fields, other pools, borrowed rows without a secret, every
status (ok, exhausted with reset times in s / ms / ISO, dead, none), a providers
block and suppressed_sources. Each verb runs through the installed CLI on a fresh
copy; afterwards everything the verb did not concern is deep-equal to before
(and unchanged rows keep their key order), and what it did concern changed as
the verb says.
"""

from __future__ import annotations

import copy
import hashlib
import time
from datetime import datetime, timezone
from typing import Any, Callable

import pytest

from store.model import STATUS_FIELDS
from tests.conftest import make_row, make_store, read_doc, run_cli, write_store

POOL = "openrouter"
KEY_OK = "sk-or-v1-roundtripOKOKOKOKOKOK0001"
KEY_EX = "sk-or-v1-roundtripEXEXEXEXEXEX0003"
NEW_KEY = "sk-or-v1-roundtripNEWNEWNEWNEW0009"
STATUS_LIKE = set(STATUS_FIELDS) | {"failure_reason", "model_cooldowns", "model_cooldown_observed_at",
                                    "status_cleared_at"}
NOW = time.time()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat().replace("+00:00", "Z")


def hermes_shaped_store() -> dict[str, Any]:
    return make_store(
        {
            POOL: [
                make_row("or0001", label="main", priority=0, token=KEY_OK, last_status="ok",
                         last_status_at=NOW - 5000, request_count=41,
                         x_unknown_field={"nested": [1, 2, {"deep": None}]}, base_url=None),
                make_row("or0002", label="OPENROUTER_API_KEY", priority=1, source="env:OPENROUTER_API_KEY",
                         secret_fingerprint="sha256:0123456789abcdef", x_flag=True),
                make_row("or0003", label="benched-s", priority=2, token=KEY_EX, last_status="exhausted",
                         last_status_at=NOW - 60, last_error_code=429,
                         last_error_reason="rate_limit_exceeded", last_error_message="slow down",
                         last_error_reset_at=NOW + 1800, failure_reason="rate_limit"),
                make_row("or0004", label="benched-ms", priority=3, token=KEY_EX + "ms",
                         last_status="exhausted", last_status_at=NOW - 30, last_error_code=402,
                         last_error_reason="insufficient_credits", last_error_reset_at=int((NOW + 900) * 1000),
                         failure_reason="billing"),
                make_row("or0005", label="benched-iso", priority=4, token=KEY_EX + "iso",
                         last_status="exhausted", last_status_at=_iso(NOW - 20), last_error_code=503,
                         last_error_reset_at=_iso(NOW + 600),
                         model_cooldowns={"anthropic/claude-sonnet-4": NOW + 300},
                         model_cooldown_observed_at={"anthropic/claude-sonnet-4": NOW - 20}),
                make_row("or0006", label="revoked", priority=5, token=KEY_EX + "dead", last_status="dead",
                         last_status_at=NOW - 10, last_error_code=401, last_error_reason="token_revoked"),
                make_row("or0007", label="fresh", priority=6, token=KEY_EX + "fresh",
                         status_cleared_at=NOW - 7000, expires_at="2099-01-01T00:00:00+00:00"),
            ],
            "anthropic": [
                make_row("an0001", label="claude code", source="claude_code", auth_type="oauth",
                         secret_fingerprint="sha256:fedcba9876543210", expires_at_ms=4102444800000),
            ],
            "nous": [
                make_row("no0001", label="portal", source="device_code", auth_type="oauth",
                         token="nous-access-roundtrip-000001", refresh_token="nous-refresh-roundtrip-01",
                         agent_key="nous-agent-roundtrip-000001", inference_base_url="https://x.test/v1",
                         scope="inference", last_refresh="2026-11-01T00:00:00+00:00"),
            ],
            "custom:together.ai": [
                make_row("cu0001", label="together", token="tg-roundtrip-key-000000000001",
                         base_url="https://api.together.ai/v1"),
            ],
        },
        updated_at="2026-11-01T12:00:00.123456+00:00",
        active_provider="nous",
        providers={"nous": {"access_token": "nous-access-roundtrip-000001", "portal_base_url": "https://p.test",
                            "x_provider_unknown": [3, 2, 1]}},
        suppressed_sources={POOL: ["env:OLD_OPENROUTER_KEY"], "anthropic": ["claude_code"]},
        x_future_top_level={"schema": 7, "list": ["a", "b"]},
    )


def _rows(doc: dict, pool: str) -> dict[str, dict]:
    return {r["id"]: r for r in doc["credential_pool"][pool]}


def assert_only(before: dict, after: dict, *, changed: dict[str, set[str]] | None = None,
                removed: set[str] = frozenset(), added: int = 0, renumbered: bool = False,
                reordered: bool = False, top: set[str] = frozenset()) -> None:
    """Everything but the named parts of POOL (and the named top-level keys) is unchanged."""
    changed = changed or {}
    for key in (set(before) | set(after)) - {"updated_at", "credential_pool"} - set(top):
        assert after.get(key, "<absent>") == before.get(key, "<absent>"), f"top-level {key!r} changed"
    assert [k for k in after if k in before] == [k for k in before if k in after], "top-level order"
    for pool in set(before["credential_pool"]) | set(after["credential_pool"]):
        if pool == POOL:
            continue
        assert after["credential_pool"].get(pool) == before["credential_pool"].get(pool), pool
        assert [list(r) for r in after["credential_pool"][pool]] == \
            [list(r) for r in before["credential_pool"][pool]], f"{pool}: key order"
    b, a = _rows(before, POOL), _rows(after, POOL)
    assert set(b) - set(a) == set(removed), "rows removed"
    new = set(a) - set(b)
    assert len(new) == added, "rows added"
    for rid, row in b.items():
        if rid in removed:
            continue
        ignore = set(changed.get(rid, set())) | ({"priority"} if renumbered else set())
        got = {k: v for k, v in a[rid].items() if k not in ignore}
        want = {k: v for k, v in row.items() if k not in ignore}
        assert got == want, f"{POOL}/{rid}: fields it did not concern changed"
        if rid not in changed:
            assert list(a[rid]) == list(row), f"{POOL}/{rid}: key order changed"
    if not reordered:
        kept = [r["id"] for r in after["credential_pool"][POOL] if r["id"] in b]
        assert kept == [r["id"] for r in before["credential_pool"][POOL] if r["id"] not in removed]


@pytest.fixture
def store(tmp_home) -> dict:
    doc = hermes_shaped_store()
    write_store(tmp_home, doc)
    return copy.deepcopy(doc)


def run(tmp_home, *args: str, input: str | None = None) -> tuple[dict, str]:
    proc = run_cli(tmp_home, *args, input=input)
    return read_doc(tmp_home), proc.stdout + proc.stderr


def test_add(tmp_home, store):
    after, out = run(tmp_home, "add", POOL, "--api-key", "-", "--label", "new", input=NEW_KEY + "\n")
    assert NEW_KEY not in out
    assert_only(store, after, added=1, top={"suppressed_sources"})
    # Adding clears that pool's suppressed sources, and only that pool's.
    assert after["suppressed_sources"] == {"anthropic": ["claude_code"]}
    new = after["credential_pool"][POOL][-1]
    assert (new["label"], new["source"], new["access_token"], new["priority"]) == ("new", "manual", NEW_KEY, 7)
    assert all(new[f] is None for f in STATUS_FIELDS) and new["request_count"] == 0


def test_add_with_priority_renumbers_only_priorities(tmp_home, store):
    after, _ = run(tmp_home, "add", POOL, "--api-key", "-", "--priority", "0", input=NEW_KEY + "\n")
    assert_only(store, after, added=1, renumbered=True, reordered=True, top={"suppressed_sources"})
    first = after["credential_pool"][POOL][0]
    assert first["access_token"] == NEW_KEY and first["priority"] == 0
    assert sorted(r["priority"] for r in after["credential_pool"][POOL]) == list(range(8))


def test_remove_manual_row(tmp_home, store):
    after, _ = run(tmp_home, "remove", POOL, "benched-s", "--yes")
    assert_only(store, after, removed={"or0003"}, renumbered=True)
    assert [r["priority"] for r in after["credential_pool"][POOL]] == list(range(6))


def test_remove_borrowed_row_suppresses_its_source(tmp_home, store):
    after, _ = run(tmp_home, "remove", POOL, "OPENROUTER_API_KEY", "--yes")
    assert_only(store, after, removed={"or0002"}, renumbered=True, top={"suppressed_sources"})
    assert after["suppressed_sources"] == {POOL: ["env:OLD_OPENROUTER_KEY", "env:OPENROUTER_API_KEY"],
                                           "anthropic": ["claude_code"]}


@pytest.mark.parametrize("target,rid", [("benched-iso", "or0005"), ("or0004", "or0004"), ("#6", "or0006")])
def test_reset_one(tmp_home, store, target, rid):
    t0 = time.time()
    after, _ = run(tmp_home, "reset", POOL, target)
    assert_only(store, after, changed={rid: STATUS_LIKE})
    row = _rows(after, POOL)[rid]
    assert all(row[f] is None for f in STATUS_FIELDS)
    assert not {"failure_reason", "model_cooldowns", "model_cooldown_observed_at"} & set(row)
    assert row["status_cleared_at"] >= t0
    assert row["request_count"] == _rows(store, POOL)[rid]["request_count"]


def test_reset_all(tmp_home, store):
    t0 = time.time()
    after, _ = run(tmp_home, "reset", POOL, "--yes")
    assert_only(store, after, changed={rid: STATUS_LIKE for rid in _rows(store, POOL)})
    for row in after["credential_pool"][POOL]:
        assert row["last_status"] is None and row["status_cleared_at"] >= t0
    # Unknown fields of the rows it did concern are still there.
    assert _rows(after, POOL)["or0001"]["x_unknown_field"] == {"nested": [1, 2, {"deep": None}]}
    assert _rows(after, POOL)["or0002"]["x_flag"] is True
    assert "access_token" not in _rows(after, POOL)["or0002"]


def test_cooldown_for(tmp_home, store):
    t0 = time.time()
    after, _ = run(tmp_home, "cooldown", POOL, "main", "--for", "15m", "--reason", "maintenance")
    assert_only(store, after, changed={"or0001": STATUS_LIKE})
    row = _rows(after, POOL)["or0001"]
    assert row["last_status"] == "exhausted" and row["last_error_reason"] == "maintenance"
    assert t0 + 900 <= row["last_error_reset_at"] <= time.time() + 900


def test_cooldown_until(tmp_home, store):
    until = time.time() + 7200.5
    iso = datetime.fromtimestamp(until, timezone.utc).isoformat()
    after, _ = run(tmp_home, "cooldown", POOL, "OPENROUTER_API_KEY", "--until", iso)
    assert_only(store, after, changed={"or0002": STATUS_LIKE})
    row = _rows(after, POOL)["or0002"]
    assert row["last_status"] == "exhausted"
    assert row["last_error_reset_at"] == pytest.approx(until, abs=1e-3)
    assert "access_token" not in row  # a borrowed row never gets a secret


def test_priority(tmp_home, store):
    after, _ = run(tmp_home, "priority", POOL, "fresh", "0")
    assert_only(store, after, renumbered=True, reordered=True)
    ordered = sorted(after["credential_pool"][POOL], key=lambda r: r["priority"])
    assert [r["id"] for r in ordered] == ["or0007", "or0001", "or0002", "or0003", "or0004", "or0005", "or0006"]


def test_strategy_set_leaves_auth_json_byte_identical(tmp_home, store):
    raw = tmp_home.auth.read_bytes()
    tmp_home.config.write_text("# operator notes\nmodel:\n  default: x  # keep me\n", encoding="utf-8")
    run(tmp_home, "strategy", POOL, "round_robin")
    assert hashlib.sha256(tmp_home.auth.read_bytes()).digest() == hashlib.sha256(raw).digest()
    cfg = tmp_home.config.read_text(encoding="utf-8")
    assert "round_robin" in cfg and "# keep me" in cfg and "# operator notes" in cfg


# --- the checker itself must be able to fail ---------------------------------------------------

Mutation = Callable[[dict], None]
MUTATIONS: dict[str, Mutation] = {
    "unknown top-level key dropped": lambda d: d.pop("x_future_top_level"),
    "other pool touched": lambda d: d["credential_pool"]["nous"][0].pop("scope"),
    "unknown row field dropped": lambda d: d["credential_pool"][POOL][0].pop("x_unknown_field"),
    "secret written into a borrowed row": lambda d: d["credential_pool"][POOL][1].update(access_token="x"),
    "row order changed": lambda d: d["credential_pool"][POOL].reverse(),
    "row key order changed": lambda d: d["credential_pool"][POOL].__setitem__(
        0, dict(reversed(list(d["credential_pool"][POOL][0].items())))),
    "providers block touched": lambda d: d["providers"]["nous"].pop("x_provider_unknown"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_negative_control_checker_catches_collateral_damage(name):
    before = hermes_shaped_store()
    after = copy.deepcopy(before)
    MUTATIONS[name](after)
    with pytest.raises(AssertionError):
        assert_only(before, after)
